#!/usr/bin/env python3
"""Write an uncompressed newc cpio initramfs without root: files, directories and the
/dev/console node the kernel needs before devtmpfs is mounted.

usage: mkinitramfs.py OUT DEST=SRC [DEST=SRC ...]   (DEST inside the image, SRC on disk)
"""
import os
import stat
import sys


class Cpio:
    def __init__(self, f):
        self.f, self.ino, self.dirs = f, 1, set()

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join("%08x" % v for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_b), 0))
        self.ino += 1
        self.f.write(hdr.encode() + name_b)
        self.f.write(b"\0" * (-(110 + len(name_b)) % 4))
        self.f.write(data)
        self.f.write(b"\0" * (-len(data) % 4))

    def mkdir(self, path):
        path = path.strip("/")
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self.dirs:
                self.dirs.add(d)
                self._entry(d, stat.S_IFDIR | 0o755)

    def file(self, dest, src):
        dest = dest.strip("/")
        self.mkdir(os.path.dirname(dest))
        with open(src, "rb") as f:
            data = f.read()
        mode = 0o755 if os.access(src, os.X_OK) else 0o644
        self._entry(dest, stat.S_IFREG | mode, data)

    def chardev(self, dest, major, minor):
        self.mkdir(os.path.dirname(dest.strip("/")))
        self._entry(dest.strip("/"), stat.S_IFCHR | 0o600, rdev=(major, minor))

    def close(self):
        self._entry("TRAILER!!!", 0)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], "wb") as f:
        c = Cpio(f)
        for d in ("dev", "proc", "sys", "tmp", "bin"):
            c.mkdir(d)
        c.chardev("dev/console", 5, 1)
        for spec in argv[1:]:
            dest, src = spec.split("=", 1)
            c.file(dest, src)
        c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
