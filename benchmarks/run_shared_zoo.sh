#!/usr/bin/env bash
# The README headline, from scratch: the 48 models of ../shared/zoo x GPU,CPU / NNAPI,CPU /
# GPU,NNAPI,CPU x subgraph and op granularity x pickers exact, tac, greedy, first-fit, each case
# fused first (the pipeline) and as it is (the report's fusion table compares the two).
#
# It runs into a NEW folder (default tacopt-bench/shared-DATE-TIME; OUT=DIR to choose one, which
# must not exist), never into the committed benchmarks/results/shared/, then prints each
# picker's geometric-mean ratio to exact next to the committed one. Extra arguments go to
# `tacopt bench` (e.g. --jobs 1 for timings without two cases sharing the cores).
# To resume an interrupted run, run `tacopt bench` with the --out it printed.
# UPDATE=1 then replaces the committed results with this run's (records gzipped, report, plots):
# how benchmarks/results/shared/ is regenerated.
# The zoo is looked for from the clone's root: ../shared/zoo beside the clone (or pass
# --zoo shared:PATH); when it is not found, the one-line error says where it looked, and the
# run's folder is removed again (a failed start leaves no empty folder).
set -euo pipefail
cd "$(dirname "$0")/.."
committed=benchmarks/results/shared/results.jsonl.gz
out="${OUT:-tacopt-bench/shared-$(date +%Y%m%d-%H%M%S)}"
if [ -e "$out" ]; then
  echo "run_shared_zoo.sh: $out exists; give OUT=DIR a new folder" >&2
  exit 2
fi
mkdir -p "$out"
# On any exit, remove the run's folder (and tacopt-bench/) if nothing was written into it.
trap 'rmdir -p "$out" 2>/dev/null || true' EXIT
start=$(date +%s.%N)
python -m tacopt.benchmarks bench \
  --zoo shared \
  --devices GPU,CPU NNAPI,CPU GPU,NNAPI,CPU \
  --granularity subgraph,op \
  --fusion fused,plain \
  --cost-model tac \
  --pickers exact,tac,greedy,first-fit \
  --time-limit 60 \
  --out "$out/results.jsonl" \
  --report "$out" \
  "$@"
end=$(date +%s.%N)
echo
echo "study took $(python -c "print(f'{$end - $start:.1f}')") s (load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime))"
echo "committed ($committed) versus this run ($out/results.jsonl):"
status=0
python -m tacopt.benchmarks compare "$committed" "$out/results.jsonl" || status=$?
if [ "${UPDATE:-0}" = 1 ]; then
  gzip -n -9 -c "$out/results.jsonl" > "$committed"
  cp "$out"/report.md "$out"/*.png "$(dirname "$committed")/"
  echo "updated $(dirname "$committed")/ from $out"
fi
exit "$status"
