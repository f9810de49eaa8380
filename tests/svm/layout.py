"""Where the harness lives in QEMU's physical memory (host.asm and plan.py agree).

The first 64 MiB belong to the harness: QEMU's firmware and multiboot loader, the
hypervisor (1 MiB), the batch module after it, the host structures at HOSTMEM and the
harness's own guest pages at HREGION. A scenario whose memory falls there, in the PCI
hole below 4 GiB, or above the RAM QEMU is given is not runnable."""

HOSTMEM = 0x03c00000
VMCB = HOSTMEM + 0x6000
HREGION = 0x03e00000                 # 2 MiB: stubs, harness guest and nested tables
RESERVED_LOW = 0x04000000
PCI_HOLE = (0xc0000000, 0x100000000)
RAM_GIB = 980                        # -m: 3 GiB below the hole, the rest from 4 GiB
RAM_TOP = (1 << 32) + (RAM_GIB - 3) * (1 << 30)
MODULE_MAX = HOSTMEM - 0x00200000 - 0x00100000   # kernel at 1 MiB, module after it

# offsets in HREGION
STUB_K = 0x0000                      # supervisor stub page (guest U/S clear)
STUB_U = 0x1000                      # user stub page (U/S set)
READ_OFF, WRITE_OFF = 0, 4           # mov al,[rbx]; hlt  /  mov [rbx],dl; hlt
GTAB = {5: 0x10000, 4: 0x11000, 3: 0x12000, 2: 0x13000, 1: 0x14000}
NTAB = {5: 0x20000, 4: 0x21000, 3: 0x22000, 2: 0x23000}

SCN_MAGIC = 0x314E4353564D56
OUT_MAGIC = 0x7E5500000000
END_MAGIC = 0x444E45454E4F44

# VMCB offsets (APM vol. 2, appendix B)
V_EXC_INTERCEPTS = 0x008
V_INTERCEPTS3 = 0x00C
V_INTERCEPTS4 = 0x010
V_ASID = 0x058
V_TLB_CONTROL = 0x05C
V_NP_ENABLE = 0x090
V_EXITINTINFO = 0x088                # the event being delivered at the #VMEXIT
V_EVENTINJ = 0x0A8                   # APM vol. 2, 15.20 Event Injection
V_NCR3 = 0x0B0
S = 0x400
V_ES, V_CS, V_SS, V_DS, V_FS, V_GS = S + 0x00, S + 0x10, S + 0x20, S + 0x30, S + 0x40, S + 0x50
V_GDTR, V_LDTR, V_IDTR, V_TR = S + 0x60, S + 0x70, S + 0x80, S + 0x90
V_CPL = S + 0xCB
V_EFER = S + 0xD0
V_CR4, V_CR3, V_CR0 = S + 0x148, S + 0x150, S + 0x158
V_DR7, V_DR6, V_RFLAGS, V_RIP = S + 0x160, S + 0x168, S + 0x170, S + 0x178
V_RSP, V_RAX = S + 0x1D8, S + 0x1F8
V_CR2 = S + 0x240
V_GPAT = S + 0x268

EXIT_EXCP_BASE = 0x40
EXIT_PF = 0x4E
EXIT_GP = 0x4D
EXIT_HLT = 0x78
EXIT_SHUTDOWN = 0x7F
EXIT_NPF = 0x400
EXIT_INVALID = (1 << 64) - 1
