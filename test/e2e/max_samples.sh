#!/usr/bin/env bash
# --max-samples: an upload with more Sample messages than the limit is
# refused with 413 naming the limit, and nothing is stored; one at the
# limit is taken. The tiny-sample bomb (test/fuzz/gen_sample_bomb.py)
# packs a million samples into a few KB.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v python3 >/dev/null || skip_all "needs python3"
command -v jq >/dev/null || skip_all "jq not installed"
GEN=${top_srcdir:-.}/test/fuzz/gen_sample_bomb.py
W='from=2000-01-01T00:00:00&to=2100-01-01T00:00:00'
python3 "$GEN" 1000001 > "$T_TMP/over.pb.gz" &&
    python3 "$GEN" 1000000 > "$T_TMP/at.pb.gz" ||
    { not_ok "gen_sample_bomb.py writes the bombs"; done_testing; }
ok "bombs of 1000001 and 1000000 samples: $(wc -c < "$T_TMP/over.pb.gz") bytes gzipped"

profd_start || { not_ok "profd starts"; done_testing; }
upload "$T_TMP/over.pb.gz" "service=bomb&type=cpu" > /dev/null
is "$HTTP_CODE" 413 "1000001 samples over the default --max-samples: 413"
is "$(echo "$BODY" | jq -r .error)" \
    "profile has 1000001 samples, more than --max-samples (1000000)" \
    "... naming the limit"
n=$(api "/api/0/profiles?service=bomb&type=cpu&$W" | jq '.body | length')
is "$n" 0 "... and nothing is stored"
upload "$T_TMP/at.pb.gz" "service=bomb&type=cpu" > /dev/null
is "$HTTP_CODE" 200 "1000000 samples, at the limit: 200"
is "$(echo "$BODY" | jq -r .body.samples)" 1000000 "... counted right"
profd_stop

# A lower limit from the config file refuses a real profile.
PROFD_DIR=
printf 'max-samples = 100\n' > "$T_TMP/profd.conf"
profd_start --config "$T_TMP/profd.conf" --retention 0 ||
    { not_ok "profd starts with max-samples = 100"; done_testing; }
f=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
upload "$f" "service=real&type=cpu" > /dev/null
is "$HTTP_CODE" 413 "config max-samples = 100: a 378-sample profile gets 413"
check "... naming --max-samples: $(echo "$BODY" | jq -r .error)" \
    grep -q 'more than --max-samples (100)' <<< "$BODY"
done_testing
