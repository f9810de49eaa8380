#!/bin/bash
# Builds the live guest into public/guest/: bios.bin (Debian seabios), vmlinuz (Debian
# i386 kernel, non-PAE -686), initramfs.cpio.gz (busybox-static:i386 + the lab's static
# programs, compiled with gcc -m32 against musl-dev:i386). Package versions are pinned:
# same inputs, byte-identical outputs. Downloads only with `apt-get download` on a private
# apt state (fetch-debs.sh: the machine's dpkg architectures and sources are left alone),
# cached and sha256-checked in .cache/guest-build/debs. The saved state (state.bin.zst) is
# made by make-state.mjs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# FLAVOUR=686 (default, 2-level 32-bit paging) -> public/guest; FLAVOUR=686-pae -> public/guest/pae
FLAVOUR=${FLAVOUR:-686}
case $FLAVOUR in 686) out=$here/guest ;; 686-pae) out=$here/guest/pae ;; *) echo "FLAVOUR must be 686 or 686-pae" >&2; exit 2 ;; esac
out=${GUEST_OUT:-$out}
mkdir -p "$out"
# outside public/ so it is never served (GUEST_OUT and GUEST_CACHE: for the setup tests)
cache=${GUEST_CACHE:-$(dirname "$here")/.cache/guest-build}
debs=$cache/debs
KVER=6.1.0-50
PKGS=(
  "linux-image-${KVER}-${FLAVOUR}-unsigned:i386=6.1.176-1@linux-image-${FLAVOUR}:i386"
  "busybox-static:i386=1:1.35.0-4+deb12u1+b1"
  "musl-dev:i386=1.2.3-1"
  "lib32gcc-12-dev=12.2.0-14+deb12u1"
  "seabios=1.16.2-1"
)
selected=$("$here/fetch-debs.sh" "$debs" "${PKGS[@]}") || exit 1
deb_of() { # pinned package name -> the .deb fetch-debs.sh selected for it
  echo "$selected" | awk -v d="$debs" -v n="$1" '$1 == n { print d "/" $2 }'
}
# scratch folders of its own, so both flavours can build at once (make -j)
x=$cache/x-$FLAVOUR; rm -rf "$x"; mkdir -p "$x"
for p in "${PKGS[@]}"; do
  n=${p%%=*}; n=${n%%:*}
  dpkg-deb -x "$(deb_of "$n")" "$x"
done
tmp=$cache/stage-$FLAVOUR; rm -rf "$tmp"; mkdir -p "$tmp"
install -m 644 "$x/usr/share/seabios/bios.bin" "$tmp/bios.bin"
kernels=("$x"/boot/vmlinuz-*-"$FLAVOUR")   # the pinned ABI, or the archive's current one
install -m 644 "${kernels[0]}" "$tmp/vmlinuz"

# static guest programs: gcc -m32 against musl, reproducible (no build id, fixed paths)
M=$x/usr/lib/i386-linux-musl
G=$x/usr/lib/gcc/x86_64-linux-gnu/12/32
root=$cache/root-$FLAVOUR; rm -rf "$root"; mkdir -p "$root"/{bin,proc,sys,dev,tmp,root}
for prog in markpage memtouch cpuidloop churn; do
  gcc -m32 -static -O2 -fno-pie -no-pie -nostdinc -nostdlib \
    -isystem "$x/usr/include/i386-linux-musl" -isystem "$(gcc -print-file-name=include)" \
    -ffile-prefix-map="$here"=. -Wl,--build-id=none -s \
    -o "$root/bin/$prog" "$M/crt1.o" "$M/crti.o" "$G/crtbeginT.o" "$here/guest-src/$prog.c" \
    "$M/libc.a" "$G/libgcc.a" "$M/libc.a" "$G/crtend.o" "$M/crtn.o"
done
install -m 755 "$x/bin/busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
install -m 755 "$here/guest-src/init" "$root/init"
find "$root" -exec touch -h -d @0 {} +
python3 "$here/mkinitramfs.py" "$root" "$tmp/initramfs.cpio.gz"
for f in bios.bin vmlinuz initramfs.cpio.gz; do
  cmp -s "$tmp/$f" "$out/$f" 2>/dev/null || cp "$tmp/$f" "$out/$f"
done
(cd "$out" && sha256sum bios.bin vmlinuz initramfs.cpio.gz > SHA256SUMS)
echo "$selected" > "$out/PACKAGES"   # which package versions went in
rm -rf "$x" "$tmp"
echo "guest assets in $out:"; (cd "$out" && ls -l bios.bin vmlinuz initramfs.cpio.gz)
