#!/bin/sh
# Installs what profd needs on Debian 12, if missing. Runs apt-get as root,
# or through sudo when not root.
#
#   sh tools/deps.sh            what building and running profd, the agent
#                               and profd-import need: the compiler and
#                               autotools, the -dev packages of libevent,
#                               OpenSSL, SQLite, libpq, protobuf-c, jansson,
#                               zlib and libdeflate, and curl: no server,
#                               browser or Go toolchain
#   sh tools/deps.sh --test     that, and what the test suite drives: a
#                               PostgreSQL server, nginx, redis, Debian's
#                               chromium, Go (go tool pprof), clang and its
#                               sanitizer runtimes, linux-perf, gperftools,
#                               python3.11, openssl, jq, wrk, sqlite3, and
#                               two npm packages (playwright-core and
#                               Grafana Pyroscope's Node.js SDK)
#   sh tools/deps.sh --list-test
#                               prints the packages --test adds, one a line
set -e
# Build and run.
BASE="build-essential autoconf automake libtool pkg-config git
libevent-dev libssl-dev libsqlite3-dev libprotobuf-c-dev protobuf-c-compiler
libjansson-dev zlib1g-dev libdeflate-dev libpq-dev curl"
# The test suite's peers and tools (test/include.am says which test uses
# what).
TEST="openssl postgresql jq golang-go time clang llvm libclang-rt-14-dev wrk
sqlite3 util-linux python3 python3.11 gzip linux-perf libgoogle-perftools-dev
systemd groff-base nginx-light xz-utils redis-server redis-tools chromium"

test=
case "${1:-}" in
--test) test=1 ;;
--list-test) for p in $TEST; do echo "$p"; done; exit 0 ;;
"") ;;
*) echo "usage: sh tools/deps.sh [--test | --list-test]" >&2; exit 2 ;;
esac
PKGS=$BASE
[ -z "$test" ] || PKGS="$BASE $TEST"
# npm for the two npm packages, from Debian when the machine has none
[ -z "$test" ] || command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"

missing=
for p in $PKGS; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ -n "$missing" ]; then
	echo "deps.sh: installing:$missing"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
	    --no-install-recommends $missing
fi
[ -n "$test" ] || exit 0

# From npm: playwright-core for the browser test (test/e2e/ui_browser.sh;
# it drives Debian's chromium, installed above, and downloads no browser),
# Grafana Pyroscope's Node.js SDK for test/e2e/pyroscope_node.sh, and
# test/protojs: buf, protoc-gen-es and Connect's Node.js client for the
# query API's and OTLP's tests.
top=$(cd "$(dirname "$0")/.." && pwd)
npm_ci() {	# DIR PACKAGE TEST
	[ -f "$top/$1/package-lock.json" ] && [ ! -d "$top/$1/node_modules/$2" ] ||
		return 0
	if command -v npm >/dev/null 2>&1; then
		echo "deps.sh: npm ci in $1 ($2)"
		PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$top/$1" \
		    --no-audit --no-fund --loglevel=error ||
		    echo "deps.sh: npm ci failed; $3 will be skipped"
	else
		echo "deps.sh: npm not found; $3 will be skipped"
	fi
}
npm_ci test/ui playwright-core "the browser test"
npm_ci test/pyroscope @pyroscope/nodejs "the Pyroscope SDK test"
npm_ci test/protojs @connectrpc/connect-node "the Connect and OTLP client tests"
