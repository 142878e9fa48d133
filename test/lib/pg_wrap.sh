#!/usr/bin/env bash
# test/e2e/pg/NAME.sh (a link to this file): runs the end-to-end test
# test/e2e/NAME.sh again with profd on the postgresql backend, in a
# throw-away PostgreSQL (test/lib/pg.sh, started by e2e.sh's profd_start).
. "${top_srcdir:-.}/test/lib/pg.sh"
pg_available || { echo "1..0 # SKIP PostgreSQL server not installed"; exit 0; }
PROFD_TEST_STORE=postgresql exec bash "${top_srcdir:-.}/test/e2e/$(basename "$0")" "$@"
