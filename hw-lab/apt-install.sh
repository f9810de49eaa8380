#!/bin/bash
# Installs Debian packages for vmemlab's setup, in a way that survives a mirror hiccup.
#
#   hw-lab/apt-install.sh [--no-recommends] [--for WHAT] PACKAGE...
#
# Packages already installed are skipped; when none is missing nothing runs. Without root
# it prints the exact `sudo apt-get install` line and exits 1. As root, a failed
# `apt-get update` is a warning (tried twice): the install goes on with the package lists
# the machine already has, and fails only when a package really cannot be had, naming it.
# Sourced (`. apt-install.sh`), it only defines apt_update_tolerant for other scripts.
# Environment: VMEMLAB_APT_RETRY_DELAY (seconds before the second update, default 5).

# apt_update_tolerant [apt-get options...]: `apt-get update` with one retry; never fails.
apt_update_tolerant() {
  local rc
  apt-get -qq "$@" update && return 0
  rc=$?
  echo "warning: apt-get update failed (exit $rc); trying once more in ${VMEMLAB_APT_RETRY_DELAY:-5} s" >&2
  sleep "${VMEMLAB_APT_RETRY_DELAY:-5}"
  apt-get -qq "$@" update && return 0
  rc=$?
  echo "warning: apt-get update failed again (exit $rc): going on with the package lists this machine already has (a mirror may be mid-sync; see the README's Setup section)" >&2
  return 0
}

# A package apt has no installable version of, in the lists it has now.
apt_uninstallable() {
  local p cand
  for p in "$@"; do
    cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
    case $cand in ''|'(none)') echo "$p" ;; esac
  done
}

[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

set -uo pipefail
recommends=1
what=vmemlab
while [ $# -gt 0 ]; do
  case $1 in
    --no-recommends) recommends=0; shift ;;
    --for) what=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "apt-install.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done

missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "$what needs these Debian packages: ${missing[*]}"
  echo "run:  sudo apt-get install -y ${missing[*]}"
  exit 1
fi

echo "$what: installing: ${missing[*]}"
apt_update_tolerant
opts=(-y -q)
[ $recommends = 1 ] || opts+=(--no-install-recommends)
DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "${missing[@]}" && exit 0
rc=$?
gone=$(apt_uninstallable "${missing[@]}" | tr '\n' ' ')
if [ -n "$gone" ]; then
  echo "error: $what cannot install ${gone% }: no installable version in this machine's package lists (is the package name right for this release? is a mirror mid-sync? see the README's Setup section)" >&2
else
  echo "error: apt-get install failed (exit $rc) for: ${missing[*]} (see apt's messages above)" >&2
fi
exit 1
