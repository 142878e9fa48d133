#!/usr/bin/env bash
# End-to-end test of GET /metrics and GET /healthz: after uploads (good,
# bad, too large), lists, gets, merges and wrong paths and methods, the
# counters by route and code, the rejection reasons, bytes received and
# stored, the latency and merge histograms all say what happened; every
# line parses as Prometheus text format 0.0.4 under its # TYPE; /healthz
# answers ok, also while the worker pool cannot take a job (it says whether
# the daemon serves, not whether a pool is busy), and /metrics answers then
# too.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"

P=$PROFD_CORPUS/bench/pool
BOMB=$PROFD_CORPUS/bad/gzip_bomb_256MiB_zeros.pb.gz
TEXT=$PROFD_CORPUS/bad/plain_text_body.txt
size() { stat -c %s "$1"; }
scrape() { curl -s -D "$T_TMP/headers" "$PROFD_URL/metrics" > "$T_TMP/metrics"; }
# m SERIES: the value of one series in the last scrape.
m() { awk -v k="$1" '$1 == k { print $2 }' "$T_TMP/metrics"; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

profd_start --workers 2 --retention 0 --max-inflated 1M ||
	{ not_ok "profd starts"; done_testing; }

# --- traffic -----------------------------------------------------------------
ids=()
for f in cpu_A_01 cpu_A_02 cpu_A_03; do
	ids+=("$(upload "$P/$f.pb.gz" "service=met&type=cpu" | jq -r .body.id)")
done
upload "$TEXT" "service=met&type=cpu" >/dev/null
is "$HTTP_CODE" 400 "garbage upload: 400"
upload "$P/cpu_A_04.pb.gz" "type=cpu" >/dev/null
is "$HTTP_CODE" 400 "upload without service: 400"
upload "$BOMB" "service=met&type=cpu" >/dev/null
is "$HTTP_CODE" 413 "gzip bomb over --max-inflated: 413"
received=$(( $(size "$P/cpu_A_01.pb.gz") + $(size "$P/cpu_A_02.pb.gz") +
	$(size "$P/cpu_A_03.pb.gz") + $(size "$TEXT") + $(size "$P/cpu_A_04.pb.gz") +
	$(size "$BOMB") ))
stored=$(( $(size "$P/cpu_A_01.pb.gz") + $(size "$P/cpu_A_02.pb.gz") +
	$(size "$P/cpu_A_03.pb.gz") ))
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
is "$(code "$PROFD_URL/api/0/profiles?service=met&$W")" 200 "list: 200"
is "$(code "$PROFD_URL/api/0/profiles/${ids[0]}")" 200 "get: 200"
is "$(code "$PROFD_URL/api/0/profiles/00000000000000000000")" 404 "get unknown: 404"
is "$(code "$PROFD_URL/api/0/profiles/merge?service=met&type=cpu&$W")" 200 "merge: 200"
is "$(code "$PROFD_URL/api/0/profiles/${ids[0]}+${ids[1]}")" 200 "merge by ids: 200"
is "$(code "$PROFD_URL/nope")" 404 "unknown path: 404"
is "$(code -X DELETE "$PROFD_URL/api/0/services")" 405 "wrong method: 405"
is "$(code -X POST "$PROFD_URL/metrics")" 405 "POST /metrics: 405"
is "$(curl -s "$PROFD_URL/healthz")" "ok" "/healthz: ok"

# --- the scrape ---------------------------------------------------------------
scrape
grep -qi '^content-type: text/plain; version=0.0.4' "$T_TMP/headers" &&
	ok "Content-Type: text/plain; version=0.0.4" || not_ok "Content-Type"
R='profd_http_requests_total'
is "$(m "$R{route=\"upload\",code=\"200\"}")" 3 "requests: upload 200 = 3"
is "$(m "$R{route=\"upload\",code=\"400\"}")" 2 "requests: upload 400 = 2"
is "$(m "$R{route=\"upload\",code=\"413\"}")" 1 "requests: upload 413 = 1"
is "$(m "$R{route=\"list\",code=\"200\"}")" 1 "requests: list 200 = 1"
is "$(m "$R{route=\"get\",code=\"200\"}") $(m "$R{route=\"get\",code=\"404\"}")" "1 1" "requests: get 200 and 404"
is "$(m "$R{route=\"merge\",code=\"200\"}") $(m "$R{route=\"get_merged\",code=\"200\"}")" "1 1" "requests: merge and get_merged"
is "$(m "$R{route=\"other\",code=\"404\"}") $(m "$R{route=\"other\",code=\"405\"}")" "1 2" "requests: unknown path and wrong methods"
is "$(m "$R{route=\"healthz\",code=\"200\"}")" 1 "requests: healthz"
is "$(m profd_uploads_total)" 3 "uploads_total = 3"
is "$(m profd_upload_received_bytes_total)" "$received" "bytes received = sum of the 6 bodies"
is "$(m 'profd_uploads_rejected_total{reason="bad_request"}') $(m 'profd_uploads_rejected_total{reason="too_large"}') $(m 'profd_uploads_rejected_total{reason="busy"}') $(m 'profd_uploads_rejected_total{reason="storage_error"}')" "2 1 0 0" "rejected by reason"
is "$(m profd_profiles_stored)" 3 "profiles stored = 3"
is "$(m profd_stored_bytes)" "$stored" "bytes stored = sum of the 3 stored"
is "$(m profd_merge_duration_seconds_count)" 2 "merge histogram: 2 merges"
is "$(m 'profd_merge_duration_seconds_bucket{le="+Inf"}')" 2 "merge histogram: +Inf bucket = count"
is "$(m 'profd_http_request_duration_seconds_count{route="upload"}')" 6 "latency histogram: 6 uploads"
is "$(m profd_workers) $(m profd_worker_queue_depth)" "2 0" "pool gauges"
is "$(m profd_retention_seconds)" 0 "retention gauge"

# Format: every sample line is name{labels} value, under its # TYPE.
bad=$(grep -v '^#' "$T_TMP/metrics" | grep -Evc '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*\})? (-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|\+Inf|-Inf|NaN)$')
is "$bad" 0 "every sample line parses"
untyped=$(awk '/^# TYPE /{t[$3]=1; next} /^#/{next}
	{ n=$1; sub(/\{.*/, "", n); b=n; sub(/_(bucket|sum|count)$/, "", b)
	  if (!(n in t) && !(b in t)) print n }' "$T_TMP/metrics" | sort -u)
is "$untyped" "" "every sample has a # TYPE"
is "$(grep -c '^# TYPE' "$T_TMP/metrics")" "$(grep '^# TYPE' "$T_TMP/metrics" | sort -u | wc -l)" "no family is typed twice"
# Buckets are cumulative within each series.
nondec=$(grep '_bucket{' "$T_TMP/metrics" | awk '{ s=$1; sub(/le="[^"]*"\}$/, "", s)
	if (s == prev && $2 + 0 < last + 0) bad++; prev = s; last = $2 } END { print bad + 0 }')
is "$nondec" 0 "histogram buckets are cumulative"

# Counters move between scrapes.
before=$(m "$R{route=\"metrics\",code=\"200\"}")
upload "$P/cpu_A_05.pb.gz" "service=met&type=cpu" >/dev/null
scrape
is "$(m "$R{route=\"metrics\",code=\"200\"}")" "$(( ${before:-0} + 1 ))" "the metrics route counts its scrapes"
is "$(m profd_uploads_total) $(m profd_profiles_stored)" "4 4" "a new upload shows in the next scrape"

# --- a busy pool: uploads are refused as busy, /healthz still says ok ----------
profd_stop
PROFD_DIR=
profd_start --workers 1 --max-queue 1 --max-inflated 512M --retention 0 ||
	{ not_ok "profd starts"; done_testing; }
# One worker, room for one waiting job. Each gzip bomb keeps the worker
# busy inflating 256 MiB (then it is refused as not a profile); while one
# runs and the next waits, the queue is full.
# poll URL [CURL ARGS]: records status codes while bombs are in flight.
poll() { while running; do code "$@"; echo; done >> "$T_TMP/poll.$BASHPID"; }
running() { local p; for p in $bpids; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
saw503= sawbusy= sawok=
for attempt in 1 2 3 4 5 6; do
	rm -f "$T_TMP"/poll.*
	bpids=
	for i in 1 2 3 4; do
		curl -s -o /dev/null --data-binary "@$BOMB" "$PROFD_URL/api/0/profiles?service=busy&type=cpu" &
		bpids="$bpids $!"
	done
	poll "$PROFD_URL/healthz" & p1=$!
	poll "$PROFD_URL/healthz" & p2=$!
	poll --data-binary "@$P/cpu_A_02.pb.gz" "$PROFD_URL/api/0/profiles?service=b2&type=cpu" & p3=$!
	poll "$PROFD_URL/metrics" & p4=$!
	wait $bpids $p1 $p2 $p3 $p4
	grep -qvx 200 "$T_TMP/poll.$p1" "$T_TMP/poll.$p2" "$T_TMP/poll.$p4" &&
	    saw503=1
	grep -qx 200 "$T_TMP/poll.$p1" && sawok=1
	grep -qx 503 "$T_TMP/poll.$p3" && sawbusy=1
	[ -n "$sawbusy" ] && break
	diag "attempt $attempt: no upload refused as busy: $(cat "$T_TMP"/poll.* | sort | uniq -c | tr '\n' ' ')"
done
diag "while the pool was full: $(cat "$T_TMP"/poll.* | sort | uniq -c | tr '\n' ' ')"
is "$sawbusy" 1 "uploads are refused with 503 while the pool cannot take a job"
is "$saw503$sawok" 1 "/healthz and /metrics answer 200 meanwhile, never 503"
is "$(curl -s "$PROFD_URL/healthz")" "ok" "/healthz is ok again afterwards"
scrape
busy=$(m 'profd_uploads_rejected_total{reason="busy"}')
[ "${busy:-0}" -ge 1 ] && ok "refused uploads count as rejected: busy ($busy)" || not_ok "rejected: busy ($busy)"
is "$(m 'profd_http_requests_total{route="healthz",code="503"}')" "" \
    "no healthz 503 was counted"
done_testing
