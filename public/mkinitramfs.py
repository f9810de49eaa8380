#!/usr/bin/env python3
"""Deterministic newc cpio (gzip, mtime 0) from a directory: sorted names, uid/gid 0,
fixed mtime, inode numbers by order. usage: mkinitramfs.py ROOTDIR OUT.cpio.gz"""
import gzip, os, stat, sys

def entries(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in sorted(dirnames + filenames):
            full = os.path.join(dirpath, n)
            out.append(os.path.relpath(full, root))
    return sorted(set(out))

def header(ino, mode, nlink, size, name):
    fields = [ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name) + 1, 0]
    return b'070701' + b''.join(b'%08X' % f for f in fields)

def pad4(n):
    return b'\0' * ((4 - n % 4) % 4)

def main(root, out):
    buf = bytearray()
    for ino, rel in enumerate(entries(root), start=1):
        full = os.path.join(root, rel)
        st = os.lstat(full)
        name = rel.encode()
        if stat.S_ISLNK(st.st_mode):
            data = os.readlink(full).encode(); mode = 0o120777
        elif stat.S_ISDIR(st.st_mode):
            data = b''; mode = 0o040755
        else:
            data = open(full, 'rb').read()
            mode = 0o100755 if st.st_mode & 0o111 else 0o100644
        h = header(ino, mode, 2 if mode & 0o040000 else 1, len(data), name)
        buf += h + name + b'\0'; buf += pad4(len(h) + len(name) + 1)
        buf += data; buf += pad4(len(data))
    name = b'TRAILER!!!'
    h = header(0, 0, 1, 0, name)
    buf += h + name + b'\0'; buf += pad4(len(h) + len(name) + 1)
    with open(out, 'wb') as f:
        with gzip.GzipFile(filename='', mode='wb', fileobj=f, mtime=0, compresslevel=9) as g:
            g.write(bytes(buf))

if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
