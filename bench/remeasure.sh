#!/bin/sh
# Issue 13's whole table, measured quietly in one go against a baseline revision (run it on a
# machine where nothing else runs; ~15 minutes plus the first run's synthetic homes and 1M
# ranking file). Every figure of docs/performance.md's current table (and of the "Quiet
# re-measurement" tables of docs/history/performance-journal.md) comes from one of these
# commands.
#
# usage: bench/remeasure.sh BASE_REV [OUT_DIR]
#   BASE_REV: the revision to compare with (e.g. the session's start); OUT_DIR: where each
#   bench's output goes (default: ./remeasure-out). Synthetic homes are written once and
#   kept in $AGENTLOG_BENCH_DATA (default /tmp/agentlog-bench-data).
set -eu
cd "$(dirname "$0")/.."
BASE=${1:?usage: bench/remeasure.sh BASE_REV [OUT_DIR]}
OUT=${2:-remeasure-out}
DATA=${AGENTLOG_BENCH_DATA:-/tmp/agentlog-bench-data}
PY=.venv/bin/python
mkdir -p "$OUT" "$DATA"
# this tree's bytecode as an install has it (baselines get theirs in bench/common.export_rev)
$PY -m compileall -q eventlog projections readers cli bench > /dev/null
run() {  # run NAME CMD...: one bench, its output in OUT/NAME.txt, the load before it
    name=$1; shift
    echo "== $name: $* (load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S) UTC)"
    "$@" > "$OUT/$name.txt" 2>&1 || { echo "   FAILED, see $OUT/$name.txt"; return 1; }
    tail -n 25 "$OUT/$name.txt"
}
run startup $PY bench/startup.py --quick --reps 11
run incremental $PY bench/incremental.py --quick --baseline "$BASE"
run reindex $PY bench/search.py --docs 100000 --queries 20
run cold $PY bench/cold.py mid --src "$DATA/mid" --baseline "$BASE" --reps 1
run cold2 $PY bench/cold.py mid --src "$DATA/mid" --baseline "$BASE" --reps 1
run cold-gb $PY bench/cold.py gb --src "$DATA/memory-gb" --baseline "$BASE" --reps 1
run cold-gb-claude $PY bench/cold.py gb --src "$DATA/memory-gb" --claude-only --reps 1
run timeline $PY bench/timeline.py --src "$DATA/mid"
run size $PY bench/size.py --quick --only-corpus
run memory $PY bench/memory.py --src "$DATA/memory-gb" --only capture
run rank $PY bench/search.py --docs 1000000 --queries 100 --rank
echo "== done $(date -u +%H:%M:%S) UTC; outputs in $OUT"
