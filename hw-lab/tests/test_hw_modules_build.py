"""ptwalk and vmcall_bench build against current and 4.19-era kernel APIs: with kbuild
against Debian's packaged headers (-Werror), and compiled against tests/shim419, a header
tree that has only the 4.19 API (what Sunway distributions ship). The QEMU test loads the
Debian build into a real kernel."""
import os
import shutil
import subprocess

import pytest

from hwlab_helpers import HW

SHIM = os.path.join(HW, "tests", "shim419", "include")
# the flags 4.19's kbuild used that matter here: C89 with GNU extensions, no declarations
# after statements, every function declared
FLAGS = ["-fsyntax-only", "-std=gnu89", "-nostdinc", "-I", SHIM, "-D__KERNEL__", "-DMODULE",
         "-Wall", "-Wdeclaration-after-statement", "-Werror",
         "-Werror=implicit-function-declaration"]


def shim_cc(path, extra=()):
    return subprocess.run(["gcc"] + FLAGS + list(extra) + [path], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("module", ["ptwalk", "vmcall_bench"])
def test_module_compiles_against_the_419_api(module):
    r = shim_cc(os.path.join(HW, "modules", module + ".c"))
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("snippet,needle", [
    ("#include <linux/pgtable.h>\n", "linux/pgtable.h"),
    ("#include <linux/mm.h>\nvoid f(struct mm_struct *mm) { mmap_read_lock(mm); }\n",
     "mmap_read_lock"),
    ("#include <linux/proc_fs.h>\nstatic const struct proc_ops o = { .proc_open = 0 };\n",
     "proc_ops"),
    ("#include <asm/pgtable.h>\nint f(pmd_t p) { return pmd_leaf(p); }\n", "pmd_leaf"),
    ("#include <linux/mm.h>\nint f(struct mm_struct *mm) { return mm_p4d_folded(mm); }\n",
     "mm_p4d_folded"),
])
def test_the_shim_lacks_the_newer_api(tmp_path, snippet, needle):
    """The shim can fail: what came after 4.19 is not there."""
    f = tmp_path / "new_api.c"
    f.write_text(snippet)
    r = shim_cc(str(f))
    assert r.returncode != 0 and needle in r.stderr, r.stderr


def test_compat_header_picks_the_419_branches(tmp_path):
    """Against the shim the compat header maps the new names onto the 4.19 API."""
    f = tmp_path / "compat.c"
    f.write_text('#include "%s"\n' % os.path.join(HW, "modules", "hwlab_compat.h") + """
#ifdef HW_HAVE_LINUX_PGTABLE_H
#error linux/pgtable.h is not in 4.19
#endif
#ifdef HW_HAVE_MMAP_LOCK
#error mmap_read_lock is not in 4.19
#endif
static int open_fn(struct inode *i, struct file *f) { (void)i; (void)f; return 0; }
HW_PROC_FILE(ops, open_fn, NULL);
const struct file_operations *p = &ops;   /* a file_operations, as 4.19 wants */
int levels(struct mm_struct *mm) { return 5 - mm_p4d_folded(mm) - mm_pud_folded(mm) - mm_pmd_folded(mm); }
int leaf(pmd_t p, pud_t u) { return pmd_leaf(p) + pud_leaf(u); }
void lock(struct mm_struct *mm) { mmap_read_lock(mm); mmap_read_unlock(mm); }
_Static_assert(5 - 1 - 0 - 0 == 4, "p4d folded by 5level-fixup: 4 levels");
""")
    r = shim_cc(str(f))
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(not os.path.isdir("/usr/src") or not any(
    d.startswith("linux-headers-") and d.endswith("-amd64") for d in os.listdir("/usr/src")),
    reason="needs linux-headers-amd64 (make setup)")
def test_modules_build_against_debian_headers():
    r = subprocess.run(["make", "-s", "-C", HW, "modules-debian", "KCFLAGS=-Werror"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    krel = subprocess.run(["make", "-s", "--no-print-directory", "-C", HW, "print-deb-krel"], capture_output=True,
                          text=True).stdout.strip()
    for m in ("ptwalk", "vmcall_bench"):
        assert os.path.exists(os.path.join(HW, "build", "modules-" + krel, m + ".ko"))
