#!/usr/bin/env bash
# Sets up the Bochs oracle in tests/bochs/.venv (idempotent, no stdin):
#   1. a virtual environment of its own, with the pinned wheel from PyPI (sha256 checked
#      by pip's --require-hashes; see requirements.txt);
#   2. build/shim.so from shim.c (glibc 2.38 symbol names for Debian 12's glibc);
#   3. build/patched/bochscpu: a copy of the installed package whose extension has the
#      stub bx_pc_system_c::get_enable_a20() (an assert(false) that VMXON reaches)
#      replaced by "return 1" - after checking the extension's sha256 and the original
#      bytes at the patched offset; any other wheel is refused;
#   4. nasm present (Debian package; make setup installs it).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="$HERE/.venv"
BUILD="$HERE/build"
PY="${PYTHON:-python3}"
SO_NAME="_bochscpu.cpython-311-x86_64-linux-gnu.so"
SO_SHA256="a872ef067d57b4d9de17370e1e26a41e2790960518729363627adb50fbd035fe"
PATCH_OFFSET=$((0x1c0690))
ORIGINAL="f30f1efa4883ec08488d0d"
PATCH="b801000000c3"

command -v nasm >/dev/null || { echo "tests/bochs: nasm is missing (Debian package nasm; make setup installs it)" >&2; exit 1; }
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV" || { echo "tests/bochs: python3 -m venv failed (Debian package python3-venv)" >&2; exit 1; }
fi
"$VENV/bin/python" - <<'PYEOF' || "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input \
    --no-deps --require-hashes --only-binary=:all: -r "$HERE/requirements.txt"
import importlib.metadata as m, sys
try:
    sys.exit(0 if m.version("bochscpu-python") == "0.4.0" else 1)
except m.PackageNotFoundError:
    sys.exit(1)
PYEOF
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
SO="$SITE/bochscpu/$SO_NAME"
[ -f "$SO" ] || { echo "tests/bochs: $SO not found: the wheel is not the pinned one" >&2; exit 1; }
echo "$SO_SHA256  $SO" | sha256sum --check --status || { echo "tests/bochs: $SO is not the pinned build (sha256 differs); refusing to patch it" >&2; exit 1; }

mkdir -p "$BUILD"
if [ ! -f "$BUILD/shim.so" ] || [ "$HERE/shim.c" -nt "$BUILD/shim.so" ]; then
  ${CC:-cc} -O2 -shared -fPIC -o "$BUILD/shim.so" "$HERE/shim.c"
fi
if [ ! -f "$BUILD/patched/bochscpu/$SO_NAME" ] || [ "$SO" -nt "$BUILD/patched/bochscpu/$SO_NAME" ]; then
  rm -rf "$BUILD/patched.tmp" && mkdir -p "$BUILD/patched.tmp"
  cp -r "$SITE/bochscpu" "$BUILD/patched.tmp/"
  "$VENV/bin/python" - "$BUILD/patched.tmp/bochscpu/$SO_NAME" "$PATCH_OFFSET" "$ORIGINAL" "$PATCH" <<'PYEOF'
import sys
path, off, orig, patch = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
data = bytearray(open(path, "rb").read())
if data[off:off + len(orig)] != orig:
    sys.exit(f"tests/bochs: unexpected bytes at {off:#x} in {path}: not the pinned wheel; refusing to patch")
data[off:off + len(patch)] = patch
open(path, "wb").write(data)
PYEOF
  rm -rf "$BUILD/patched" && mv "$BUILD/patched.tmp" "$BUILD/patched"
fi
echo "tests/bochs: Bochs oracle ready ($VENV, $BUILD)"
