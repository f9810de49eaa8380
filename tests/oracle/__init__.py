"""What the two CPU oracles share: tests/bochs (EPT on Bochs' VMX) and tests/svm (NPT on
QEMU's SVM) both translate an engine scenario into a machine a CPU runs and compare.

  guest.py     scenario memory (Words), the guest paging formats, a nested walk, the
               harness's candidate regions, the entries a result's walks read
  machines.py  the random machines' shared steps (events, the retry loop), over the
               reference generators (tests/reference/gen.py)
  report.py    vmsim, the scenario as compared, the runs' common options, and the
               printed and written summary

Each oracle puts tests/ on sys.path and imports these as oracle.guest, oracle.report...
"""
