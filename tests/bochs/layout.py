"""Where the harness's pages are, as offsets in its 2 MiB host region (host.asm,
guest.inc and plan.py agree on these)."""

HOST_OFF = {
    "pml4": 0x0000, "pdpt": 0x1000, "pd": 0x2000,   # host page tables (identity, 2 MiB page)
    "gdt": 0x3000, "tss": 0x4000,
    "vmxon": 0x5000,
    "stack_top": 0x8000,                             # page 0x7000
    "code": 0x8000,                                  # host.asm, two pages
}
VMCS_OFF = 0x6000
FIELD_OFF = 0xa000       # VMCS field table: (field, value, msr) rows, field -1 ends it
LOG_OFF = 0xb000         # exit log, 64 bytes per exit
CTRL_OFF = 0xc000        # control block (host.asm)

# guest pages: host region offset GUEST_BASE + page offset; the guest sees page offset p
# at its linear address GV + p and guest-physical GP + GUEST_BASE + p
GUEST_BASE = 0x10000
GUEST_OFF = {"kcode": 0x0000, "ucode": 0x1000, "kdata": 0x2000, "kstack": 0x3000,
             "ustack": 0x4000, "sys": 0x5000, "idt": 0x6000}
GUEST_USER_PAGES = (0x1000, 0x4000)
CMD_OFF = 0x10000        # commands (guest page offset), 16 bytes each
CMD_PAGES = 0x10         # 4096 commands
GUEST_MAPPED = CMD_OFF + CMD_PAGES * 0x1000
# harness guest page tables and EPT tables (host region offsets)
GTAB_OFF = {"l3": 0x40000, "l2": 0x41000, "l1": 0x42000}
ETAB_OFF = {"l3": 0x43000, "l2": 0x44000}
REGION = 1 << 21
END_MAGIC = 0x454E44
