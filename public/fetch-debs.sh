#!/bin/bash
# Fetches pinned Debian packages (any architecture) into a cache folder, without touching
# the machine's apt or dpkg configuration: apt runs on a private state (its own package
# lists, with APT::Architectures naming the architectures it needs); dpkg's own list of
# architectures and the sources lists are never changed. Works without root.
#
#   fetch-debs.sh CACHE_DIR PIN...
#     PIN = name[:arch]=version[@meta[:arch]]
#
# For each pin, a cached .deb whose sha256 matches the archive's (or, offline, the sum
# recorded when it was downloaded) is used as it is; a corrupt or truncated one is deleted
# and downloaded again, never unpacked. When the pinned version has left the archive, the
# current version of the same package is used and one line says so; when the package
# itself is gone (a kernel's ABI name changed), `@meta` names the metapackage whose first
# dependency replaces it. Pins keep the build byte-identical while they hold.
# Prints one line per pin on stdout, "name file version" (file in CACHE_DIR); progress
# and apt's messages go to stderr.
# A failed `apt-get update` is a warning (tried twice); the fetch fails only when a package
# cannot be had, with its name. Exit status: 0 ok, 1 a package could not be fetched, 2 usage.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../hw-lab/apt-install.sh"   # apt_update_tolerant

[ $# -ge 2 ] || { echo "usage: fetch-debs.sh CACHE_DIR name[:arch]=version[@meta]..." >&2; exit 2; }
cache=$1; shift
mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial"
cache=$(cd "$cache" && pwd)
# one fetch at a time per cache (both guest flavours may build at once under make -j)
exec 9>"$cache/.lock"
flock 9
sums=$cache/SHA256SUMS   # "sha256  file  name=version", recorded at download
touch "$sums"

archs=amd64
for pin in "$@"; do
  spec=${pin%%=*}
  case $spec in *:*) a=${spec#*:}; case ",$archs," in *",$a,"*) ;; *) archs="$archs,$a" ;; esac ;; esac
done
APT=(-o "APT::Architectures=$archs" -o "Dir::State::Lists=$cache/apt/lists"
     -o "Dir::Cache=$cache/apt/cache" -o "Dir::State::Status=/var/lib/dpkg/status")
# as root, apt would try to drop to its _apt user, who cannot write into our cache
[ "$(id -u)" != 0 ] || APT+=(-o APT::Sandbox::User=root)
updated=0
ensure_lists() {
  [ $updated = 1 ] && return
  updated=1
  echo "fetch-debs: reading the archive's package lists ($archs) into $cache/apt" >&2
  apt_update_tolerant "${APT[@]}" >&2
}
field() { # field NAME: from an apt-cache show stanza on stdin, the first value
  awk -v f="$1:" '$1 == f { print $2; exit }'
}
stanza() { apt-cache "${APT[@]}" show "$1" 2>/dev/null; }
candidate() { apt-cache "${APT[@]}" policy "$1" 2>/dev/null | awk '/Candidate:/ { print $2; exit }'; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
recorded() { # recorded FILE: the sum written when FILE was downloaded
  awk -v f="$1" '$2 == f { s = $1 } END { if (s) print s }' "$sums"
}

selected=()
fail=0
for pin in "$@"; do
  meta=; case $pin in *@*) meta=${pin#*@}; pin=${pin%@*} ;; esac
  spec=${pin%%=*}; want=${pin#*=}; name=${spec%%:*}
  arch=; case $spec in *:*) arch=${spec#*:} ;; esac
  # 1. A cached file recorded for this exact pin, whole and unaltered: no apt at all.
  file=$(awk -v p="$name=$want" -v a="$arch" '$3 == p && (a == "" || index($2, "_" a ".deb") || index($2, "_all.deb")) { f = $2 } END { print f }' "$sums")
  if [ -n "$file" ] && [ -f "$cache/$file" ]; then
    if [ "$(sha_of "$cache/$file")" = "$(recorded "$file")" ]; then
      selected+=("$name $file $want"); continue
    fi
    echo "fetch-debs: cached $file does not match its recorded sha256 (corrupt or truncated): deleted, downloading again" >&2
    rm -f "$cache/$file"
  fi
  # 2. Ask the archive: the pinned version, else the package's current one, else the
  #    metapackage's current dependency.
  ensure_lists
  ver=$want; pkg=$spec
  if [ -z "$(stanza "$pkg=$ver")" ]; then
    ver=$(candidate "$pkg")
    if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
      if [ -n "$meta" ]; then
        dep=$(stanza "$meta" | field Depends)
        [ -n "$(candidate "$dep-unsigned${arch:+:$arch}")" ] && [ "$(candidate "$dep-unsigned${arch:+:$arch}")" != "(none)" ] && dep=$dep-unsigned
        pkg=$dep${arch:+:$arch}; ver=$(candidate "$pkg")
      fi
    fi
    if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
      echo "error: $spec cannot be had: neither $want nor any other version is in the archive's lists (a mirror mid-sync? see the README's Setup section)" >&2
      fail=1; continue
    fi
    echo "notice: $spec $want has left the archive; using ${pkg%%:*} $ver instead (the build and the saved state depending on it are redone)" >&2
  fi
  st=$(stanza "$pkg=$ver")
  file=$(basename "$(echo "$st" | field Filename)")
  sum=$(echo "$st" | field SHA256)
  if [ -f "$cache/$file" ] && [ "$(sha_of "$cache/$file")" != "$sum" ]; then
    echo "fetch-debs: cached $file does not match the archive's sha256 (corrupt or truncated): deleted, downloading again" >&2
    rm -f "$cache/$file"
  fi
  if [ ! -f "$cache/$file" ]; then
    (cd "$cache" && apt-get -q "${APT[@]}" download "$pkg=$ver" >&2) || true
    got=$(ls -t "$cache"/"${pkg%%:*}"_*.deb 2>/dev/null | head -1)
    [ -n "$got" ] && [ "$(basename "$got")" != "$file" ] && mv "$got" "$cache/$file"
  fi
  if [ ! -f "$cache/$file" ]; then
    echo "error: could not download ${pkg%%:*} $ver (apt-get download failed; see above)" >&2
    fail=1; continue
  fi
  if [ -n "$sum" ] && [ "$(sha_of "$cache/$file")" != "$sum" ]; then
    echo "error: downloaded $file does not match the archive's sha256: deleted" >&2
    rm -f "$cache/$file"; fail=1; continue
  fi
  echo "$(sha_of "$cache/$file")  $file  $name=$want" >> "$sums"
  selected+=("$name $file $ver")
done
[ $fail = 0 ] || exit 1
printf '%s\n' "${selected[@]}"
