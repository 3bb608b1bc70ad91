#!/bin/bash
# Timing chain of the 2026-11-27 05:20 session, run under the timing lock from /tmp/lrn (commit in chain.log).
cd /tmp/lrn
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v17/t
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
TEST=$(python3 -c "import json;print(' '.join('/work/shared/zoo/'+f for f in json.load(open('benchmarks/zoo_split.json'))['test']))")
TUNE=$(python3 -c "import json;print(' '.join('/work/shared/zoo/'+f for f in json.load(open('benchmarks/zoo_split.json'))['tune']))")
step learn_z4e $T learn -o $O/learn_z4e.json.gz --records $O/learn_z4e.records.jsonl --quiet
step adapt_z4e $T learn --from /tmp/lrn/cost_models/data/learned_cpu.json.gz -o $O/adapt_z4e.json.gz --records $O/adapt_z4e.records.jsonl --quiet
step z4_test_c $T measure $TEST --out $O/z4_test_c.jsonl --quiet
step z4_tune_d $T measure $TUNE --out $O/z4_tune_d.jsonl --quiet
