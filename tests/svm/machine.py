"""Runs batches of planned scenarios in QEMU (TCG, `-cpu max`: SVM with nested paging)
and reads back what host.asm reported for each command.

One QEMU boot runs many scenarios: host.asm is the multiboot kernel, the batch its one
module; the report comes through the debug console (port 0xe9) as 64-bit words."""

from __future__ import annotations

import os
import struct
import subprocess
import tempfile

import layout as L

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "build")
QEMU = os.environ.get("QEMU", "qemu-system-x86_64")


class HarnessError(Exception):
    pass


def host_binary() -> str:
    out = os.path.join(BUILD, "host.bin")
    src = os.path.join(HERE, "host.asm")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        os.makedirs(BUILD, exist_ok=True)
        subprocess.run(["nasm", "-f", "bin", "-o", out, src], check=True)
    return out


def qemu_command(kernel: str, module: str, out: str) -> list:
    return [QEMU, "-accel", "tcg", "-cpu", "max", "-machine", "pc,memory-backend=ram0",
            "-object", f"memory-backend-ram,id=ram0,size={L.RAM_GIB}G,reserve=off",
            "-m", f"{L.RAM_GIB}G",
            "-kernel", kernel, "-initrd", module, "-display", "none", "-nodefaults",
            "-no-reboot", "-serial", "none", "-monitor", "none",
            "-global", "i440FX-pcihost.pci-hole64-size=0",
            "-debugcon", f"file:{out}", "-device", "isa-debug-exit,iobase=0xf4,iosize=4"]


def run_batch(host_levels: int, plans: list, timeout: float = 300) -> list:
    """-> per plan: a list of per-command reports (exitcode, exitinfo1, exitinfo2, rax,
    rip, dumps {pa: value}), or a string saying what went wrong for that plan."""
    kernel = host_binary()
    from plan import encode
    blob = bytearray(struct.pack("<QQ", host_levels, len(plans)))
    for p in plans:
        blob += encode(p)
    if len(blob) > L.MODULE_MAX:
        raise HarnessError(f"batch of {len(blob)} bytes exceeds the module room")
    with tempfile.TemporaryDirectory(prefix="svm-") as tmp:
        mod = os.path.join(tmp, "batch.bin")
        out = os.path.join(tmp, "out.bin")
        with open(mod, "wb") as f:
            f.write(blob)
        cmd = qemu_command(kernel, mod, out)
        try:
            pr = subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            pr = None
        data = open(out, "rb").read() if os.path.exists(out) else b""
    if pr is not None and pr.returncode not in (0, 1) and not data:
        # QEMU did not start: say why, once, instead of failing every scenario
        raise HarnessError("QEMU did not start: " + pr.stderr.decode(errors="replace").strip()[-400:] +
                           (" (the guest's RAM is mapped with reserve=off; a host with "
                            "vm.overcommit_memory=2 refuses it)" if b"allocate" in pr.stderr else ""))
    words = struct.unpack(f"<{len(data) // 8}Q", data[:len(data) // 8 * 8])
    results = []
    k = 0
    for p in plans:
        cmds = []
        ncmd = len(p.commands) + 1
        dumps_of = [c["dumps"] for c in p.commands] + [sorted(p.final_words)]
        ok = True
        for i in range(ncmd):
            if k + 6 > len(words) or words[k] != (L.OUT_MAGIC | i):
                ok = False
                break
            ex, i1, i2, rax, rip = words[k + 1:k + 6]
            k += 6
            d = dumps_of[i]
            vals = words[k:k + len(d)]
            k += len(d)
            cmds.append({"exitcode": ex, "exitinfo1": i1, "exitinfo2": i2, "rax": rax,
                         "rip": rip, "dumps": dict(zip(d, vals))})
        if not ok or k >= len(words) or words[k] != L.END_MAGIC:
            why = "QEMU stopped before the end of this scenario"
            if pr is None:
                why += " (timed out)"
            elif pr.returncode not in (0, 1):
                why += f" (exit status {pr.returncode}: {pr.stderr.decode()[-300:]})"
            results.append(why)
            # the scenarios after it run in a boot of their own
            rest = plans[len(results):]
            return results + (run_batch(host_levels, rest, timeout) if rest else [])
        k += 1
        results.append(cmds)
    return results


def qemu_version() -> str:
    try:
        out = subprocess.run([QEMU, "--version"], capture_output=True, text=True).stdout
        return out.split("version", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"
