"""hw-lab's kernel modules in the result: each appears, run or skipped with the reason a
learner can act on (no module support, not in a KVM guest, headers missing with the exact
package or the instruction to build against the running kernel's tree, not loaded)."""
import ctypes
import mmap
import os
import re

PROC_VMCALL = "/proc/vmcall_bench"
PROC_PTWALK = "/proc/ptwalk"
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TEACHES = {
    "ptwalk": "the kernel's own page-table walk of one address, level by level (pgd .. pte "
              "with the levels this kernel folds), checked against /proc/self/pagemap; in a "
              "guest this is the gVA -> gPA half of a 2-D walk",
    "vmcall_bench": "a no-op hypercall from the guest kernel: the cost of one exit that the "
                    "hypervisor handles in the kernel",
}
NAMES = tuple(TEACHES)


def build_steps(probe, name):
    """What stands between this machine and a loaded module, in the order to fix it."""
    m = probe.get("modules") or {}
    steps = []
    if not m.get("loadable", True):
        steps.append(m.get("reason") or "this kernel cannot load modules")
        return steps
    if not m.get("headers_present", True):
        steps.append("kernel headers for %s are missing (%s): %s" % (
            probe.get("kernel", {}).get("release", "this kernel"),
            m.get("kernel_build_dir", "/lib/modules/<release>/build"),
            m.get("headers_install") or "install them"))
    steps.append("not loaded: make -C hw-lab modules && sudo insmod hw-lab/modules/%s.ko, "
                 "then run hw-lab/run again" % name)
    return steps


def skip_reason(probe, name, proc_path):
    why = []
    if name == "vmcall_bench":
        if probe.get("arch") != "x86_64":
            return "x86 only (VMCALL/VMMCALL); this machine is %s" % probe.get("arch")
        v = probe.get("virtualization", {})
        if v.get("hypervisor") != "kvm":
            why.append("not in a KVM guest (%s): the module refuses to load there" % (
                "the hypervisor is %s" % v["hypervisor"] if v.get("hypervisor") else
                "bare metal as far as CPUID and DMI tell: VMCALL/VMMCALL would raise #UD"))
        elif probe.get("kvm", {}).get("backend") == "kvm_pvm":
            pass  # the outer hypervisor is what answers; nothing to add here
    if os.path.exists(proc_path):
        return "%s exists but this user cannot use it (mode %o): run hw-lab/run with sudo" % (
            proc_path, os.stat(proc_path).st_mode & 0o777)
    why += build_steps(probe, name)
    return "; ".join(why)


def vmcall_from_module(path=PROC_VMCALL):
    """Numbers from the vmcall_bench kernel module when a learner has loaded it."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    kv = dict(line.split(None, 1) for line in text.splitlines() if " " in line)
    try:
        m = {k: float(kv[k]) for k in ("min", "median", "mean", "max")}
        m.update(name="round_trip", unit="tsc_cycles",
                 per="%s with an unknown hypercall number" % kv.get("insn", "vmcall"),
                 count=int(kv["count"]))
    except (KeyError, ValueError):
        return None
    return {"name": "vmcall_bench", "status": "ok", "notes": [],
            "teaches": TEACHES["vmcall_bench"],
            "cases": [{"name": kv.get("insn", "vmcall"), "status": "ok", "metrics": [m]}]}


LEVEL = re.compile(r"^(pgd|p4d|pud|pmd|pte) index (\d+) entry (0x[0-9a-f]+)", re.M)


def parse_ptwalk(text):
    """/proc/ptwalk's answer as facts: levels, the physical address or where it stopped."""
    out = {"levels": [{"level": l, "index": int(i), "entry": e}
                      for l, i, e in LEVEL.findall(text)]}
    m = re.search(r"^levels (\d+)", text, re.M)
    if m:
        out["table_levels"] = int(m.group(1))
    m = re.search(r"^folded (.*)$", text, re.M)
    if m:
        out["folded"] = m.group(1).split()
    m = re.search(r"^pa (0x[0-9a-f]+) page (\d+)", text, re.M)
    if m:
        out["pa"], out["page_bytes"] = m.group(1), int(m.group(2))
    m = re.search(r"^not-present at (\w+)", text, re.M)
    if m:
        out["not_present_at"] = m.group(1)
    m = re.search(r"^error: (.*)$", text, re.M)
    if m:
        out["error"] = m.group(1)
    return out


def pagemap_pa(va, page):
    """The physical address /proc/self/pagemap gives for va (None when the kernel hides
    frame numbers from this user, or the page is absent)."""
    try:
        with open("/proc/self/pagemap", "rb") as f:
            f.seek((va // page) * 8)
            e = int.from_bytes(f.read(8), "little")
    except OSError:
        return None
    pfn = e & ((1 << 55) - 1)
    if not (e >> 63) & 1 or not pfn:
        return None
    return pfn * page + va % page


def ptwalk_from_module(path=PROC_PTWALK):
    """Walk one page of this process with the module and compare with pagemap."""
    page = os.sysconf("SC_PAGE_SIZE")
    buf = mmap.mmap(-1, page)
    buf[0:1] = b"x"                                   # fault it in
    va = ctypes.addressof(ctypes.c_char.from_buffer(buf)) + 123
    try:
        with open(path, "w") as f:
            f.write("%d 0x%x\n" % (os.getpid(), va))
        with open(path) as f:
            text = f.read()
    except OSError as e:
        return {"name": "ptwalk", "status": "error", "teaches": TEACHES["ptwalk"],
                "reason": "%s: %s" % (path, e.strerror), "notes": []}
    facts = parse_ptwalk(text)
    facts["va"] = "0x%x" % va
    pm = pagemap_pa(va, page)
    facts["pagemap_pa"] = None if pm is None else "0x%x" % pm
    ok = "pa" in facts and (pm is None or int(facts["pa"], 16) == pm)
    facts["agrees_with_pagemap"] = None if pm is None or "pa" not in facts else ok
    case = {"name": "self", "status": "ok" if ok else "error", "facts": facts}
    if not ok:
        case["reason"] = ("the walk gave %s, pagemap %s" % (facts.get("pa"), facts["pagemap_pa"])
                          if "pa" in facts else "the walk stopped: %s" % (
                              facts.get("error") or "not present at %s" % facts.get("not_present_at")))
    return {"name": "ptwalk", "status": "ok" if ok else "error", "teaches": TEACHES["ptwalk"],
            "cases": [case], "notes": [] if pm is not None else [
                "pagemap hides frame numbers from this user: the walk is not cross-checked"]}


def entries(probe, only=None, vmcall_path=PROC_VMCALL, ptwalk_path=PROC_PTWALK):
    """One result entry per module: run when it is loaded and usable, else skipped."""
    out = []
    for name in NAMES:
        if only is not None and name not in only:
            continue
        got = None
        if name == "vmcall_bench":
            got = vmcall_from_module(vmcall_path)
        elif os.access(ptwalk_path, os.R_OK | os.W_OK):
            got = ptwalk_from_module(ptwalk_path)
        if got is None:
            proc = vmcall_path if name == "vmcall_bench" else ptwalk_path
            got = {"name": name, "teaches": TEACHES[name], "status": "skipped",
                   "reason": skip_reason(probe, name, proc), "notes": []}
        out.append(got)
    return out


def annotate(doc):
    """Notes that explain backend-specific figures (added to the benchmarks they concern)."""
    probe = doc.get("probe", {})
    backend = probe.get("kvm", {}).get("backend")
    for b in doc.get("benchmarks", []):
        notes = b.setdefault("notes", [])
        if b["name"] == "cpuid_exit" and b.get("status") == "ok":
            notes.append("cpuid_leaf0 is the published method (unfenced rdtsc; cpuid; "
                         "rdtsc): compare its min with the published mins. cpuid_leaf0_fenced "
                         "uses the fenced timer and includes timer_overhead.")
        if b["name"] != "kvm_exits" or b.get("status") != "ok":
            continue
        if backend == "kvm_pvm":
            notes.append("kvm_exits ran on kvm_pvm, a software backend: its exits are PVM's, "
                         "not VT-x's or SVM's; compare them only with other kvm_pvm results.")
        for c in b.get("cases", []):
            if c.get("name") != "cr3_invlpg" or "kvm_stats" not in c:
                continue
            st = c["kvm_stats"].get("vcpu", {})
            n = c.get("params", {}).get("iterations")
            if backend == "kvm_pvm" and n:
                notes.append(
                    "cr3_invlpg on kvm_pvm: %d exits for %d invlpg in %d rounds (%.3f per "
                    "round). PVM emulates guest CPL0 inside KVM, so mov cr3 and invlpg are "
                    "emulation steps, not exits; the 3 exits per round (CR3 read, CR3 write, "
                    "INVLPG) are what kvm_intel ept=0 or kvm_amd npt=0 take, and ept=1/npt=1 "
                    "take none." % (st.get("exits", 0), st.get("invlpg", 0), n,
                                    st.get("exits", 0) / n))
            elif backend in ("kvm_intel", "kvm_amd") and n:
                notes.append("cr3_invlpg on %s with tdp=%s: %d exits in %d rounds (%.2f per "
                             "round; shadow paging takes 3: CR3 read, CR3 write, INVLPG)" % (
                                 backend, probe.get("kvm", {}).get("tdp"), st.get("exits", 0),
                                 n, st.get("exits", 0) / n))
    return doc
