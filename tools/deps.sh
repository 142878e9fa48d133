#!/bin/sh
# Installs what profd needs to build and test on Debian 12, if missing.
# Runs apt-get as root, or through sudo when not root.
set -e
PKGS="build-essential autoconf automake libtool pkg-config git
libevent-dev libsqlite3-dev libprotobuf-c-dev protobuf-c-compiler
libjansson-dev zlib1g-dev libdeflate-dev curl jq golang-go time clang llvm
libclang-rt-14-dev wrk sqlite3 util-linux python3 python3.11 gzip linux-perf
systemd groff-base nginx-light xz-utils
redis-server redis-tools"
missing=
for p in $PKGS; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "deps.sh: installing:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
