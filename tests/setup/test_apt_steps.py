"""The setup scripts' apt steps against a stub apt-get / apt-cache: a mirror whose
`apt-get update` fails (as bookworm-security's i386 index did, mid-sync) must not stop
setup; a pinned version that left the archive falls back to the current one with one line
said; a corrupt cached .deb is deleted and fetched again, never unpacked; and the guest
build goes on to the same bytes. Nothing here touches the machine's apt or dpkg state."""
import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APT_INSTALL = ROOT / "hw-lab" / "apt-install.sh"
FETCH = ROOT / "public" / "fetch-debs.sh"
BUILD = ROOT / "public" / "build-guest.sh"
REAL_DEBS = ROOT / ".cache" / "guest-build" / "debs"

# A stub apt-get: `update` fails (exit 100, like a mirror mid-sync); `install` and `download`
# succeed from a fake archive (STUB_ARCHIVE, JSON) unless the package is not in it. Every
# call is logged to STUB_LOG.
APT_GET = r'''#!/usr/bin/env python3
import json, os, shutil, sys
args = sys.argv[1:]
open(os.environ["STUB_LOG"], "a").write("apt-get " + " ".join(args) + "\n")
verbs = [a for a in args if a in ("update", "install", "download")]
archive = json.load(open(os.environ["STUB_ARCHIVE"]))
if verbs[0] == "update":
    print("E: Failed to fetch .../binary-i386/Packages  File has unexpected size (365796 != 365800). Mirror sync in progress?", file=sys.stderr)
    sys.exit(100)
pkgs = args[args.index(verbs[0]) + 1:]
pkgs = [p for p in pkgs if not p.startswith("-")]
if verbs[0] == "install":
    bad = [p for p in pkgs if p not in {e["name"] for e in archive}]
    if bad:
        print("E: Unable to locate package " + bad[0], file=sys.stderr); sys.exit(100)
    sys.exit(0)
for spec in pkgs:
    name, ver = spec.split("=", 1)
    name, _, arch = name.partition(":")
    e = [e for e in archive if e["name"] == name and e["version"] == ver and (not arch or e["arch"] in (arch, "all"))]
    if not e:
        print("E: Version '%s' for '%s' was not found" % (ver, name), file=sys.stderr); sys.exit(100)
    e = e[0]
    # apt names a downloaded file with the epoch's colon escaped
    shutil.copy(e["pool"], "%s_%s_%s.deb" % (name, ver.replace(":", "%3a"), e["arch"]))
'''

# A stub apt-cache answering `show NAME[:ARCH][=VERSION]` and `policy NAME[:ARCH]` from the
# same fake archive (the candidate is the last version listed).
APT_CACHE = r'''#!/usr/bin/env python3
import json, os, sys
raw = sys.argv[1:]
verb = next(a for a in raw if a in ("show", "policy"))
spec = raw[raw.index(verb) + 1]
archive = json.load(open(os.environ["STUB_ARCHIVE"]))
name, _, ver = spec.partition("=")
name, _, arch = name.partition(":")
es = [e for e in archive if e["name"] == name and (not arch or e["arch"] in (arch, "all"))]
if verb == "policy":
    print(name + ":"); print("  Candidate: " + (es[-1]["version"] if es else "(none)")); sys.exit(0)
es = [e for e in es if not ver or e["version"] == ver]
if not es:
    print("E: No packages found", file=sys.stderr); sys.exit(100)
e = es[-1]
print("Package: %s\nVersion: %s\nArchitecture: %s" % (name, e["version"], e["arch"]))
if e.get("depends"): print("Depends: %s (= %s)" % (e["depends"], e["version"]))
print("Filename: pool/main/x/%s_%s_%s.deb\nSHA256: %s\n" % (name, e["version"].split(":")[-1], e["arch"], e["sha256"]))
'''


def write_exec(path: Path, body: str) -> None:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def stubs(tmp_path):
    """A bin/ folder with the stubs first on PATH, a fake archive and the call log."""
    b = tmp_path / "bin"
    b.mkdir()
    write_exec(b / "apt-get", APT_GET)
    write_exec(b / "apt-cache", APT_CACHE)
    pool = tmp_path / "pool"
    pool.mkdir()
    archive = []

    def add(name, version, arch="i386", content=None, depends=None, pool_file=None):
        f = pool_file or (pool / ("%s_%s_%s.deb" % (name, version.replace(":", "_"), arch)))
        if pool_file is None:
            f.write_bytes(content or ("%s %s %s\n" % (name, version, arch)).encode() * 100)
        archive.append({"name": name, "version": version, "arch": arch, "pool": str(f), "sha256": sha(f), "depends": depends})
        (tmp_path / "archive.json").write_text(json.dumps(archive))

    log = tmp_path / "calls.log"
    log.write_text("")
    env = dict(os.environ, PATH="%s:%s" % (b, os.environ["PATH"]), STUB_LOG=str(log),
               STUB_ARCHIVE=str(tmp_path / "archive.json"), VMEMLAB_APT_RETRY_DELAY="0")
    (tmp_path / "archive.json").write_text("[]")
    return {"bin": b, "add": add, "log": log, "env": env, "tmp": tmp_path}


def calls(stubs, verb):
    return [l for l in stubs["log"].read_text().splitlines() if verb in l.split()[1:]]


# ---- hw-lab/apt-install.sh: system packages ------------------------------------------

def as_root_missing(stubs, missing):
    write_exec(stubs["bin"] / "id", "#!/bin/sh\necho 0\n")
    cases = "|".join("*%s*" % m for m in missing)
    write_exec(stubs["bin"] / "dpkg-query", '#!/bin/sh\ncase "$*" in %s) exit 1;; esac\necho "install ok installed"\n' % cases)


def test_failed_update_is_a_warning_and_the_install_goes_on(stubs):
    as_root_missing(stubs, ["qemu-system-x86", "busybox-static"])
    stubs["add"]("qemu-system-x86", "1:7.2", arch="amd64")
    stubs["add"]("busybox-static", "1:1.35", arch="amd64")
    r = subprocess.run([str(APT_INSTALL), "--no-recommends", "gcc", "qemu-system-x86", "busybox-static"],
                       capture_output=True, text=True, env=stubs["env"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(calls(stubs, "update")) == 2          # one retry
    inst = calls(stubs, "install")
    assert len(inst) == 1 and inst[0].endswith("--no-install-recommends qemu-system-x86 busybox-static")
    assert "warning: apt-get update failed (exit 100)" in r.stderr
    assert "going on with the package lists this machine already has" in r.stderr


def test_a_package_that_cannot_be_had_is_named(stubs):
    as_root_missing(stubs, ["qemu-system-x86", "no-such-package"])
    stubs["add"]("qemu-system-x86", "1:7.2", arch="amd64")
    r = subprocess.run([str(APT_INSTALL), "qemu-system-x86", "no-such-package"],
                       capture_output=True, text=True, env=stubs["env"])
    assert r.returncode == 1
    assert "cannot install no-such-package:" in r.stderr
    assert "qemu-system-x86:" not in r.stderr.split("cannot install")[1].split("\n")[0]


def test_nothing_runs_when_everything_is_installed(stubs):
    write_exec(stubs["bin"] / "dpkg-query", '#!/bin/sh\necho "install ok installed"\n')
    r = subprocess.run([str(APT_INSTALL), "gcc", "make"], capture_output=True, text=True, env=stubs["env"])
    assert r.returncode == 0 and stubs["log"].read_text() == ""


def test_hw_lab_setup_goes_on_when_update_fails(stubs):
    # hw-lab's `make setup` as root, busybox-static missing, the mirror's update failing
    as_root_missing(stubs, ["busybox-static"])
    stubs["add"]("busybox-static", "1:1.35", arch="amd64")
    env = dict(stubs["env"])
    r = subprocess.run(["make", "-s", "-C", str(ROOT / "hw-lab"), "setup"], capture_output=True, text=True, env=env)
    assert len(calls(stubs, "install")) == 1, r.stdout + r.stderr
    assert "warning: apt-get update failed" in r.stderr
    if (ROOT / "hw-lab" / "build" / "guest" / ".unpacked").exists():
        assert r.returncode == 0, r.stdout + r.stderr


def test_a_machine_without_firefox_gets_it_from_make_setup(stubs):
    # every tool this machine has on PATH, except Firefox ESR (the second browser the tests drive)
    shadow = stubs["tmp"] / "path"
    shadow.mkdir()
    for d in os.environ["PATH"].split(":"):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if name != "firefox-esr" and not (shadow / name).exists() and not (stubs["bin"] / name).exists():
                (shadow / name).symlink_to(os.path.join(d, name))
    as_root_missing(stubs, ["firefox-esr"])
    stubs["add"]("firefox-esr", "153.7.0esr-1~deb12u1", arch="amd64")
    env = dict(stubs["env"], PATH="%s:%s" % (stubs["bin"], shadow))
    r = subprocess.run(["make", "-s", "system-deps"], cwd=ROOT, capture_output=True, text=True, env=env)
    inst = calls(stubs, "install")
    assert len(inst) == 1 and inst[0].split()[-1] == "firefox-esr", r.stdout + r.stderr
    assert [p for p in inst[0].split()[2:] if not p.startswith("-")] == ["firefox-esr"], inst[0]
    assert r.returncode == 0, r.stdout + r.stderr


def test_no_script_changes_the_machines_architectures():
    out = subprocess.run(["git", "grep", "-n", "--", "--add-" + "architecture", "--", ":!*.md"],
                         cwd=ROOT, capture_output=True, text=True).stdout
    assert out == ""


# ---- public/fetch-debs.sh: the guest's pinned i386 packages on a private apt state ----

def fetch(stubs, cache, *pins):
    return subprocess.run([str(FETCH), str(cache), *pins], capture_output=True, text=True, env=stubs["env"])


def test_pinned_packages_fetched_although_update_fails(stubs):
    stubs["add"]("busybox-static", "1:1.35.0-4", arch="i386")
    stubs["add"]("seabios", "1.16.2-1", arch="all")
    stubs["add"]("musl-dev", "1.2.3-1", arch="i386")
    cache = stubs["tmp"] / "cache"
    r = fetch(stubs, cache, "busybox-static:i386=1:1.35.0-4", "seabios=1.16.2-1", "musl-dev:i386=1.2.3-1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == "busybox-static busybox-static_1.35.0-4_i386.deb 1:1.35.0-4"
    assert lines[1] == "seabios seabios_1.16.2-1_all.deb 1.16.2-1"
    assert "warning: apt-get update failed" in r.stderr
    # apt ran on its own state, with i386 named there: the machine's dpkg was not asked to change
    upd = calls(stubs, "update")[0]
    # each architecture once, however many packages name it
    assert "APT::Architectures=amd64,i386 " in upd + " " and ("Dir::State::Lists=%s/apt/lists" % cache) in upd
    assert "(amd64,i386)" in r.stderr
    # second run: all cached and whole, apt is not run at all
    stubs["log"].write_text("")
    r = fetch(stubs, cache, "busybox-static:i386=1:1.35.0-4", "seabios=1.16.2-1", "musl-dev:i386=1.2.3-1")
    assert r.returncode == 0 and stubs["log"].read_text() == ""


def test_a_pin_that_left_the_archive_falls_back_with_one_line(stubs):
    stubs["add"]("musl-dev", "1.2.3-2", arch="i386")      # 1.2.3-1 is gone
    r = fetch(stubs, stubs["tmp"] / "cache", "musl-dev:i386=1.2.3-1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "musl-dev musl-dev_1.2.3-2_i386.deb 1.2.3-2"
    notice = [l for l in r.stderr.splitlines() if l.startswith("notice:")]
    assert notice == ["notice: musl-dev:i386 1.2.3-1 has left the archive; using musl-dev 1.2.3-2 instead "
                      "(the build and the saved state depending on it are redone)"]


def test_a_kernel_whose_abi_name_changed_follows_its_metapackage(stubs):
    stubs["add"]("linux-image-6.1.0-51-686-unsigned", "6.1.180-1")
    stubs["add"]("linux-image-686", "6.1.180-1", depends="linux-image-6.1.0-51-686")
    r = fetch(stubs, stubs["tmp"] / "cache", "linux-image-6.1.0-50-686-unsigned:i386=6.1.176-1@linux-image-686:i386")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "linux-image-6.1.0-50-686-unsigned linux-image-6.1.0-51-686-unsigned_6.1.180-1_i386.deb 6.1.180-1"


def test_a_corrupt_cached_deb_is_deleted_and_fetched_again(stubs):
    stubs["add"]("musl-dev", "1.2.3-1", arch="i386")
    cache = stubs["tmp"] / "cache"
    assert fetch(stubs, cache, "musl-dev:i386=1.2.3-1").returncode == 0
    deb = cache / "musl-dev_1.2.3-1_i386.deb"
    good = sha(deb)
    deb.write_bytes(deb.read_bytes()[:100])             # truncated, as by an interrupted download
    stubs["log"].write_text("")
    r = fetch(stubs, cache, "musl-dev:i386=1.2.3-1")
    assert r.returncode == 0, r.stderr
    assert "does not match its recorded sha256" in r.stderr
    assert len(calls(stubs, "download")) == 1 and sha(deb) == good


def test_a_download_that_does_not_match_the_archive_is_refused(stubs):
    stubs["add"]("musl-dev", "1.2.3-1", arch="i386")
    arch = json.loads(Path(stubs["env"]["STUB_ARCHIVE"]).read_text())
    arch[0]["sha256"] = "0" * 64                          # the mirror served other bytes
    Path(stubs["env"]["STUB_ARCHIVE"]).write_text(json.dumps(arch))
    cache = stubs["tmp"] / "cache"
    r = fetch(stubs, cache, "musl-dev:i386=1.2.3-1")
    assert r.returncode == 1 and "does not match the archive's sha256" in r.stderr
    assert not list(cache.glob("*.deb"))


def test_a_package_nowhere_in_the_archive_fails_with_its_name(stubs):
    r = fetch(stubs, stubs["tmp"] / "cache", "busybox-static:i386=1:1.35.0-4")
    assert r.returncode == 1
    assert "error: busybox-static:i386 cannot be had" in r.stderr


@pytest.mark.skipif(not (REAL_DEBS / "SHA256SUMS").exists() or not (ROOT / "public" / "guest" / "SHA256SUMS").exists(),
                    reason="needs the guest built once (make build)")
def test_the_guest_build_goes_on_to_the_same_bytes_when_update_fails(stubs):
    # the fake archive serves the very .debs the real build used; update always fails
    pins = [l.split() for l in (ROOT / "public" / "guest" / "PACKAGES").read_text().splitlines()]
    for name, file, version in pins:
        arch = file.rsplit("_", 1)[1][:-4]
        stubs["add"](name, version, arch=arch, pool_file=REAL_DEBS / file)
    out = stubs["tmp"] / "out"
    env = dict(stubs["env"], GUEST_OUT=str(out), GUEST_CACHE=str(stubs["tmp"] / "gcache"), FLAVOUR="686")
    r = subprocess.run([str(BUILD)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "warning: apt-get update failed" in r.stderr
    assert (out / "SHA256SUMS").read_text() == (ROOT / "public" / "guest" / "SHA256SUMS").read_text()
