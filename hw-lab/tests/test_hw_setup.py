"""make setup: installs nothing when everything is there, and without root prints the
exact apt-get line and fails."""
import os
import stat
import subprocess

from hwlab_helpers import HW


def shim(dirpath, name, body):
    p = os.path.join(dirpath, name)
    with open(p, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(p, stat.S_IRWXU)


def test_non_root_with_missing_packages_prints_the_command(tmp_path):
    # pretend to be uid 1000 on a machine where qemu-system-x86 and busybox-static are missing
    shim(tmp_path, "id", 'echo 1000')
    shim(tmp_path, "dpkg-query", 'case "$*" in *qemu-system-x86*|*busybox-static*) exit 1;; '
                                 '*Status*) echo "install ok installed";; *) exec /usr/bin/dpkg-query "$@";; esac')
    shim(tmp_path, "apt-get", 'echo "apt-get must not run"; exit 99')
    env = dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ["PATH"]))
    r = subprocess.run(["make", "-s", "-C", HW, "setup"], capture_output=True, text=True, env=env)
    assert r.returncode != 0
    assert "run:  sudo apt-get install -y qemu-system-x86 busybox-static" in r.stdout
    assert "apt-get must not run" not in r.stdout


def test_setup_is_idempotent_when_everything_is_installed(tmp_path):
    shim(tmp_path, "apt-get", 'echo "apt-get must not run"; exit 99')
    shim(tmp_path, "dpkg-query", 'case "$*" in *Status*) echo "install ok installed";; '
                                 '*) exec /usr/bin/dpkg-query "$@";; esac')
    env = dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ["PATH"]))
    if not os.path.exists(os.path.join(HW, "build", "guest", ".unpacked")):
        import pytest
        pytest.skip("guest kernel not unpacked yet (first make setup downloads it)")
    r = subprocess.run(["make", "-s", "-C", HW, "setup"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "apt-get must not run" not in r.stdout + r.stderr
