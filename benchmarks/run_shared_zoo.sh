#!/usr/bin/env bash
# The acceptance study of issue #7: the 48 models of ../shared/zoo x GPU,CPU / NNAPI,CPU /
# GPU,NNAPI,CPU x subgraph and op granularity x pickers exact, tac, greedy, first-fit.
# Resumable: run it again after an interruption. Extra arguments go to `tacopt bench`
# (e.g. --jobs 1 for timings without two studies sharing the cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/shared
mkdir -p "$out"
exec python -m benchmarks \
  --zoo shared \
  --devices GPU,CPU NNAPI,CPU GPU,NNAPI,CPU \
  --granularity subgraph,op \
  --cost-model tac \
  --pickers exact,tac,greedy,first-fit \
  --time-limit 60 \
  --out "$out/results.jsonl" \
  --report "$out" \
  "$@"
