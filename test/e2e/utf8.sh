#!/usr/bin/env bash
# Non-UTF-8 input: every parameter that is stored or echoed must be valid
# UTF-8. A Latin-1 service, a label value or instance_id of a bare 0xFF is
# refused with a 400 naming the parameter and leaves nothing behind; error
# replies that quote bad input (an unknown path, an over-long label key cut
# inside a character) are still valid JSON; and real UTF-8 round-trips
# exactly through list, services and labels.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v jq >/dev/null || skip_all "jq not installed"
f=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
[ -f "$f" ] || f=$(find "$PROFD_CORPUS/go" -name '*.pb.gz' 2>/dev/null | sort | head -n 1)
[ -n "$f" ] && [ -f "$f" ] || skip_all "no corpus profile under $PROFD_CORPUS/go"

profd_start --workers 2 --retention 0 || { not_ok "profd starts"; done_testing; }
ok "profd starts"

blobs() { store_blobs; }
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
# json_error: the last reply's body is JSON with a string "error".
json_error() { printf '%s' "$BODY" | jq -e '.error | strings' >/dev/null 2>&1; }
# refused CODE WORD DESC: the last reply had status CODE, a JSON body, and
# its error names WORD.
refused() {
	local msg
	is "$HTTP_CODE" "$1" "$3: $1"
	if msg=$(printf '%s' "$BODY" | jq -er .error 2>/dev/null); then
		case $msg in
		*"$2"*) ok "$3: the error names $2 ($msg)" ;;
		*) not_ok "$3: the error names $2"; diag "error: $msg" ;;
		esac
	else
		not_ok "$3: the body is JSON with an error"; diag "body: $BODY"
	fi
}

# --- refused before anything is stored ---------------------------------------
upload "$f" "service=caf%E9&type=cpu" >/dev/null
refused 400 service "Latin-1 service"
upload "$f" "service=caf%E9&type=cpu" >/dev/null
is "$HTTP_CODE" 400 "a retry is refused too"
upload "$f" "service=s&type=cpu&labels=k=%FF" >/dev/null
refused 400 labels "label value 0xFF"
upload "$f" "service=s&type=cpu&instance_id=%FF" >/dev/null
refused 400 instance_id "instance_id 0xFF"
upload "$f" "service=s&type=cpu%E9" >/dev/null
refused 400 type "type with 0xE9"
is "$(blobs)" 0 "no blob stored"
api "/api/0/profiles?service=caf%E9&$W" >/dev/null
refused 400 service "list with a Latin-1 service"
api "/api/0/profiles?service=s&$W" >/dev/null
is "$(printf '%s' "$BODY" | jq -c .body)" '[]' "list shows nothing"
api /api/0/services >/dev/null
is "$(printf '%s' "$BODY" | jq -c .body)" '[]' "services show nothing"
api "/api/0/profiles/merge?service=s&type=cpu&labels=k=%FF&$W" >/dev/null
refused 400 labels "merge with a label value 0xFF"
api "/api/0/labels?service=caf%E9" >/dev/null
refused 400 service "labels endpoint with a Latin-1 service"
api "/api/0/labels?key=k%FF" >/dev/null
refused 400 key "labels endpoint with a non-UTF-8 key"

# --- errors that quote bad input are still JSON --------------------------------
api /%FF >/dev/null
is "$HTTP_CODE" 404 "GET /%FF: 404"
check "GET /%FF: the body is valid JSON" json_error
# 63 ASCII bytes and an é: the quote of the key stops at 64 bytes, inside
# the é.
key=$(printf 'k%.0s' $(seq 1 63))%C3%A9
upload "$f" "service=s&type=cpu&labels=$key=v" >/dev/null
is "$HTTP_CODE" 400 "label key of 63 bytes and %C3%A9: 400"
check "long label key: the body is valid JSON" json_error
api "/api/0/labels?key=$key" >/dev/null
is "$HTTP_CODE" 400 "labels endpoint, same key: 400"
check "labels endpoint, same key: the body is valid JSON" json_error
is "$(blobs)" 0 "still no blob stored"

# --- valid UTF-8 round-trips ----------------------------------------------------
upload "$f" "service=caf%C3%A9&type=cpu&labels=mark=%E2%9C%93&instance_id=%F0%9F%98%80" >/dev/null
is "$HTTP_CODE" 200 "UTF-8 service, label value and instance_id stored"
is "$(printf '%s' "$BODY" | jq -r .body.service)" "café" "META has the service"
is "$(blobs)" 1 "one blob"
api "/api/0/profiles?service=caf%C3%A9&$W&labels=mark=%E2%9C%93" >/dev/null
is "$(printf '%s' "$BODY" | jq -r '.body | length')" 1 "list by service and label finds it"
is "$(printf '%s' "$BODY" | jq -r '.body[0].service')" "café" "list: service exact"
is "$(printf '%s' "$BODY" | jq -r '.body[0].labels[] | select(.key=="mark") | .value')" "✓" "list: label value exact"
is "$(printf '%s' "$BODY" | jq -r '.body[0].labels[] | select(.key=="instance_id") | .value')" "😀" "list: instance_id exact"
api /api/0/services >/dev/null
is "$(printf '%s' "$BODY" | jq -c .body)" '["café"]' "services: exact"
api "/api/0/labels?service=caf%C3%A9&key=mark" >/dev/null
is "$(printf '%s' "$BODY" | jq -c .body)" '["✓"]' "labels: value exact"
api "/api/0/labels?service=caf%C3%A9" >/dev/null
is "$(printf '%s' "$BODY" | jq -c '.body | sort')" '["instance_id","mark"]' "labels: keys"

done_testing
