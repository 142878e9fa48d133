#!/usr/bin/env bash
# The web UI served from the binary: / and /ui redirect to /ui/ (keeping
# the query), /ui/ is index.html, each file of ui/ comes byte-identical,
# gzipped to clients that ask (and the gzip inflates to the same bytes),
# with an ETag that answers If-None-Match with 304, no-cache and nosniff;
# an unknown file is 404, a POST 405; the files need no token when the
# API does; the whole page weighs under 200 KB gzipped.
. "${top_srcdir:-.}/test/lib/e2e.sh"

S=${top_srcdir:-.}
printf 'reader-0123456789 read\n' >"$T_TMP/tokens"
profd_start --auth-file "$T_TMP/tokens" || { not_ok "profd starts"; done_testing; }

# status PATH [CURL ARGS]: the status code.
status() {
	local path=$1; shift
	curl -s -o /dev/null -w '%{http_code}' "$@" "$PROFD_URL$path"
}
# header PATH NAME [CURL ARGS]: one response header's value.
header() {
	local path=$1 name=$2; shift 2
	curl -s -D - -o /dev/null "$@" "$PROFD_URL$path" | tr -d '\r' |
	    sed -n "s/^$name: //Ip" | head -n 1
}

is "$(status /) $(header / Location)" "302 /ui/" "/ redirects to /ui/"
is "$(header '/ui?service=a&type=cpu' Location)" "/ui/?service=a&type=cpu" \
    "/ui redirects to /ui/ with the query"
is "$(status /ui/)" 200 "/ui/ answers 200 without a token"
curl -s "$PROFD_URL/ui/" >"$T_TMP/index"
check "/ui/ is ui/index.html, byte for byte" cmp -s "$T_TMP/index" "$S/ui/index.html"
is "$(header /ui/ Content-Type)" "text/html; charset=utf-8" "index.html: text/html"
total=0
for f in "$S"/ui/*; do
	name=${f##*/}
	curl -s "$PROFD_URL/ui/$name" >"$T_TMP/plain"
	curl -s -H 'Accept-Encoding: gzip' "$PROFD_URL/ui/$name" >"$T_TMP/gz"
	check "$name: served byte for byte" cmp -s "$T_TMP/plain" "$f"
	is "$(header "/ui/$name" Content-Encoding -H 'Accept-Encoding: gzip, br')" gzip \
	    "$name: gzip when asked for"
	check "$name: the gzip inflates to the file" \
	    sh -c "gzip -dc <'$T_TMP/gz' | cmp -s - '$f'"
	is "$(header "/ui/$name" Content-Encoding)" "" "$name: plain when not asked"
	etag=$(header "/ui/$name" ETag)
	is "$(status "/ui/$name" -H "If-None-Match: $etag")" 304 "$name: If-None-Match $etag: 304"
	total=$((total + $(wc -c <"$T_TMP/gz")))
done
is "$(header /ui/app.js Content-Type)" "text/javascript; charset=utf-8" "app.js: text/javascript"
is "$(header /ui/style.css Cache-Control)" no-cache "no-cache (revalidated by ETag)"
is "$(header /ui/style.css X-Content-Type-Options)" nosniff "nosniff"
check "the page weighs $total bytes gzipped, under 200 KB" test "$total" -lt 204800
is "$(status /ui/nope.js)" 404 "an unknown file: 404"
is "$(status /ui/../README)" 404 "a path out of ui/: 404"
is "$(status /ui/ -X POST -d x)" 405 "POST /ui/: 405"
is "$(status /ui/ -I)" 200 "HEAD /ui/: 200"
is "$(status '/api/0/services')" 401 "the API still needs the token"
profd_stop
done_testing
