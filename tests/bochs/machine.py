"""One scenario on Bochs: the engine's built machine (vmsim image) loaded into Bochs'
memory, the harness's hypervisor (host.asm) and guest (guest64.asm / guest32.asm) around
it, every command run under VMX, and what the CPU did recorded per command.

Runs inside the harness's own virtual environment (tests/bochs/setup.sh), where the
patched copy of bochscpu is importable; fidelity.py is the entry point.

The recording, per command (an access or an event):
  reads      [(hpa, size)]        every physical read of a paging-structure entry
  writes     [(hpa, size)]        every physical write to one (A/D updates)
  outcome    ok | guest_page_fault | ept_violation | ept_misconfig | vmfunc_exit |
             vmcall_exit | invalid_opcode | other:<what>
  hpa        the physical address of the data access (reads and writes) when ok
  fault      vector/error code/CR2, or exit reason/qualification/guest-physical and
             guest-linear address from the VMCS (read there by the hypervisor)
A command's window opens when the CPU starts the access instruction (for a fetch: when
the call that jumps to the gva has executed) and closes when it completes, faults or
exits; the walks of the harness's own pages happen outside every window (code fetch of
the next instruction, the command list, the stacks).
"""

from __future__ import annotations

import struct

import bochscpu
import bochscpu.memory as bmem

from layout import (HOST_OFF, GUEST_OFF, CMD_OFF, CTRL_OFF, LOG_OFF, FIELD_OFF,
                    VMCS_OFF, END_MAGIC)

PAGE = 4096


class Memory:
    """Bochs' physical memory, page by page, every page zeroed when first touched."""

    def __init__(self):
        self.pages = {}

    def page(self, pa: int) -> None:
        pa &= ~(PAGE - 1)
        if pa not in self.pages:
            hva = bmem.allocate_host_page()
            if not hva:
                raise RuntimeError("bochscpu could not allocate a host page")
            bmem.page_insert(pa, hva)
            bmem.phy_write(pa, [0] * PAGE)
            self.pages[pa] = hva

    def write(self, pa: int, data: bytes) -> None:
        end = pa + len(data)
        p = pa & ~(PAGE - 1)
        while p < end:
            self.page(p)
            p += PAGE
        # phy_write wants a sequence of ints; one call per page keeps it inside a page
        off = 0
        while off < len(data):
            chunk = min(len(data) - off, PAGE - ((pa + off) & (PAGE - 1)))
            bmem.phy_write(pa + off, list(data[off:off + chunk]))
            off += chunk

    def read(self, pa: int, size: int) -> bytes:
        if (pa & ~(PAGE - 1)) not in self.pages:
            return bytes(size)
        return bytes(bmem.phy_read(pa, size))

    def release(self) -> None:
        for pa, hva in self.pages.items():
            bmem.page_remove(pa)
            bmem.release_host_page(hva)
        self.pages.clear()


def segment(selector: int, base: int, limit: int, attr: int, present: bool = True):
    s = bochscpu.Segment()
    s.present = present
    s.selector = selector
    s.base = base
    s.limit = limit
    s.attr = attr
    return s


def global_segment(base: int, limit: int):
    g = bochscpu.GlobalSegment()
    g.base = base
    g.limit = limit
    return g


class Recorder:
    """The hooks: what the CPU did inside each command's window."""

    def __init__(self, plan, mem: Memory):
        self.plan = plan
        self.mem = mem
        self.rips = plan.rips            # name -> guest linear address
        self.cmd = -1                    # index of the command being executed
        self.window = None               # the open window (a dict), or None
        self.fetch_target = None
        self.records = [None] * len(plan.commands)
        self.exits = 0
        self.problems = []
        self.vmcs_page = plan.hbase + VMCS_OFF
        self.host_done = plan.host_done
        self.steps = 0
        self.aborted = False

    def open(self, kind: str):
        self.window = {"kind": kind, "reads": [], "writes": [], "outcome": None,
                       "hpa": None, "fault": None}

    def close(self, outcome: str, **kw):
        w = self.window
        if w is None:
            return
        w["outcome"] = outcome
        w.update(kw)
        if 0 <= self.cmd < len(self.records):
            self.records[self.cmd] = w
        self.window = None
        self.fetch_target = None

    # --- hooks ---------------------------------------------------------------------

    def before(self, sess, cpu_id, _insn):
        rip = sess.cpu.rip
        self.steps += 1
        if rip == self.host_done:
            sess.stop()
            return
        if self.steps > self.plan.step_limit:
            self.problems.append((self.cmd, "instruction limit reached (the guest or host is looping)"))
            sess.stop()
            return
        if self.fetch_target is not None and self.window is not None:
            if rip == self.fetch_target:
                planted = "plant" in self.plan.commands[self.cmd]
                self.close("ok")
                if not planted:
                    # the CPU completed a fetch the engine says faults: the bytes there
                    # are no ret; stop before running them (the comparison reports it)
                    self.problems.append((self.cmd + 1, f"stopped at command {self.cmd}: the "
                                          f"CPU fetched from {rip:#x}, where the engine "
                                          "expects a fault (nothing to run there)"))
                    self.aborted = True
                    sess.stop()
                return
        r = self.rips
        if rip == r["next"]:
            self.cmd += 1
            if self.window is not None:          # a window nothing closed
                self.close("other:no-completion")
        elif rip in (r["k_read"], r["k_write"], r["u_read"], r["u_write"], r["k_vmfunc"],
                     r["k_vmcall"], r["k_mov_cr3"], r["k_invlpg"]):
            self.open("insn")
        elif rip == r["pte_point"]:
            # the guest kernel's store to its page-table entry, done for it here (the
            # entry's frame need not be mapped in the guest); its invlpg follows
            c = self.plan.commands[self.cmd]
            self.mem.write(c["pte_hpa"], c["pte_bytes"])
            self.open("insn")
            self.close("ok")

    def after(self, sess, cpu_id, _insn):
        rip = sess.cpu.rip                  # already the next instruction
        if self.window is not None and self.window["kind"] == "insn":
            self.close("ok")
            return
        c = self.plan.commands[self.cmd] if 0 <= self.cmd < len(self.plan.commands) else None
        if c is not None and c["op"] == 3 and self.window is None and rip == c["arg"] \
                and self.fetch_target is None:
            # the call to the gva has executed: the fetch's translation comes next
            self.open("fetch")
            self.fetch_target = c["arg"]

    def phy(self, sess, cpu_id, pa, length, memtype, rw):
        w = self.window
        if w is None:
            return
        if (pa & ~(PAGE - 1)) == self.vmcs_page:
            return
        (w["writes"] if rw & 1 else w["reads"]).append((pa, length))

    def lin(self, sess, cpu_id, la, pa, length, memtype, rw):
        w = self.window
        if w is not None and w["hpa"] is None and la == self.plan.commands[self.cmd]["arg"]:
            w["hpa"] = pa

    def exception(self, sess, cpu_id, vector, err):
        if self.window is None:
            if vector != 14 or self.cmd < 0:
                self.problems.append((self.cmd, f"exception {vector} (error {err:#x}) outside a "
                                                f"command window, command {self.cmd}"))
            else:
                self.problems.append((self.cmd, f"#PF outside a command window (error {err:#x}, "
                                                f"CR2 {sess.cpu.cr2:#x}), command {self.cmd}"))
            return
        if vector == 14:
            self.close("guest_page_fault", fault={"vector": 14, "error_code": err,
                                                  "cr2": sess.cpu.cr2})
        elif vector == 6:
            self.close("invalid_opcode", fault={"vector": 6})
        else:
            self.close(f"other:exception-{vector}", fault={"vector": vector, "error_code": err})

    def vmexit(self, sess, cpu_id, reason, qual):
        n = self.exits
        self.exits += 1
        if self.window is None:
            if reason != 18 or self.cmd < len(self.plan.commands) - 1:
                self.problems.append((self.cmd, f"VM exit {reason} (qualification {qual:#x}) outside "
                                                f"a command window, command {self.cmd}"))
            return
        name = {48: "ept_violation", 49: "ept_misconfig", 59: "vmfunc_exit",
                18: "vmcall_exit"}.get(reason & 0xffff, f"other:exit-{reason}")
        self.close(name, fault={"exit_reason": reason, "qualification_hook": qual,
                                "log_index": n})


def run(plan) -> dict:
    """Loads plan (see plan.py) into Bochs, runs it, returns the per-command records."""
    mem = Memory()
    try:
        for pa, data in plan.memory:
            mem.write(pa, data)
        sess = bochscpu.Session()
        sess.missing_page_handler = mem.page
        st = bochscpu.State()
        hb = plan.hbase
        st.cr0 = 0x80010031                      # PG WP NE ET PE
        st.cr3 = hb + HOST_OFF["pml4"]
        st.cr4 = 0x2020                          # VMXE PAE
        st.efer = 0x500                          # LMA LME
        code = segment(0x08, 0, 0xffffffff, 0x209b)
        data = segment(0x10, 0, 0xffffffff, 0xc093)
        st.cs = code
        st.ds = st.es = st.ss = st.fs = st.gs = data
        st.tr = segment(0x18, hb + HOST_OFF["tss"], 0x67, 0x8b)
        st.ldtr = segment(0, 0, 0, 0, present=False)
        st.gdtr = global_segment(hb + HOST_OFF["gdt"], 0x27)
        st.idtr = global_segment(0, 0xfff)
        st.rip = hb + HOST_OFF["code"]
        st.rsp = hb + HOST_OFF["stack_top"]
        st.rflags = 2
        sess.cpu.state = st
        rec = Recorder(plan, mem)
        hook = bochscpu.Hook()
        hook.before_execution = rec.before
        hook.after_execution = rec.after
        hook.phy_access = rec.phy
        hook.lin_access = rec.lin
        hook.exception = rec.exception
        hook.vmexit = rec.vmexit
        sess.run([hook])
        ctrl = struct.unpack("<10Q", mem.read(hb + CTRL_OFF, 80))
        status, vmerr, failed_at = ctrl[7], ctrl[8], ctrl[9]
        nlog = ctrl[0]
        log = []
        for i in range(nlog):
            e = struct.unpack("<8Q", mem.read(hb + LOG_OFF + 64 * i, 64))
            log.append({"reason": e[0], "qualification": e[1], "gpa": e[2], "gla": e[3],
                        "rip": e[4], "len": e[5], "idt_vectoring": e[6], "eptp_index": e[7]})
        problems = list(rec.problems)
        last = rec.cmd
        if status == 2:
            problems.append((last, f"VMX instruction failed ({'VMWRITE of field %#x' % failed_at if failed_at > 5 else ['', 'VMXON', 'VMCLEAR', 'VMPTRLD', 'VMLAUNCH', 'VMRESUME'][failed_at]}), "
                            f"VM-instruction error {vmerr}"))
        elif status == 3:
            problems.append((last, f"unexpected VM exit {log[-1]['reason'] if log else '?'}"))
        elif status != 1 and not rec.aborted:
            problems.append((last, "the run did not reach its end"))
        for r in rec.records:
            if r and r["fault"] and "log_index" in r["fault"]:
                i = r["fault"]["log_index"]
                if i < len(log):
                    r["fault"]["log"] = log[i]
        words = {}
        for pa in plan.check_words:
            words[pa] = struct.unpack("<Q", mem.read(pa, 8))[0]
        del hook, sess
        return {"records": rec.records, "problems": problems, "log": log, "words": words}
    finally:
        mem.release()
