#!/bin/sh
# A self-signed certificate, to try the proxy recipe before the real certificate is there
# (and for tests/server/proxy.test.ts): `deploy/local-cert.sh NAME DIR` writes
# DIR/fullchain.pem and DIR/privkey.pem for NAME, a host name or an IP address, valid for
# 30 days. Browsers warn about it (no authority signed it); for a course use the
# university's certificate or certbot's. Needs openssl (Debian: apt-get install openssl).
set -eu
usage='usage: deploy/local-cert.sh NAME DIR   (NAME: lab.example.edu, or an address such as 127.0.0.1)'
name=${1:?$usage}
dir=${2:?$usage}
# An address is named as one (IP:), anything else as a host name (DNS:).
case $name in
  *:*) san="IP:$name" ;;
  *[!0-9.]*) san="DNS:$name" ;;
  *) san="IP:$name" ;;
esac
mkdir -p "$dir"
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -subj "/CN=$name" -addext "subjectAltName=$san" \
  -keyout "$dir/privkey.pem" -out "$dir/fullchain.pem" 2>/dev/null
chmod 644 "$dir/fullchain.pem"
echo "$dir/fullchain.pem and $dir/privkey.pem: self-signed for $name ($san), 30 days"
