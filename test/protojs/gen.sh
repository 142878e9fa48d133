#!/bin/sh
# Generates gen/ (JavaScript and .d.ts, not committed) from profd's .proto
# files with buf and protoc-gen-es from this folder's node_modules, and
# schema/, the same files under one root, which `buf curl --schema` reads.
# Usage: gen.sh [TOP_SRCDIR]. Quiet and quick when gen/ is up to date.
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "${1:-$here/../..}" && pwd)
cd "$here"
if [ -f gen/.stamp ] &&
    [ -z "$(find "$top/proto" -name '*.proto' -newer gen/.stamp)" ]; then
	exit 0
fi
# One root: profile.proto, types/ and querier/ (Pyroscope's import paths)
# and opentelemetry/ (OTLP's).
rm -rf schema gen.tmp
mkdir -p schema
cp "$top/proto/profile.proto" schema/
(cd "$top/proto/pyroscope" && find . -name '*.proto') | while read -r f; do
	mkdir -p "schema/$(dirname "$f")"
	cp "$top/proto/pyroscope/$f" "schema/$f"
done
(cd "$top/proto/otlp" && find . -name '*.proto') | while read -r f; do
	mkdir -p "schema/$(dirname "$f")"
	cp "$top/proto/otlp/$f" "schema/$f"
done
printf 'version: v2\n' > schema/buf.yaml
./node_modules/.bin/buf generate --template buf.gen.yaml -o gen.tmp schema
rm -rf gen
mv gen.tmp/gen gen
rm -rf gen.tmp
touch gen/.stamp
