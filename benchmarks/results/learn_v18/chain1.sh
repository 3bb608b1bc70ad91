#!/bin/bash
# Timing chain of the 2026-11-27 07:04 session, run under the timing lock from /tmp/lrn (commit in chain.log).
cd /tmp/lrn
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v18
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
TUNE=$(python3 -c "import json;print(' '.join('/work/shared/zoo/'+f for f in json.load(open('benchmarks/zoo_split.json'))['tune']))")
step learn_z4g $T learn -o $O/learn_z4g.json.gz --records $O/learn_z4g.records.jsonl --quiet
step z4_tune_e $T measure $TUNE --out $O/z4_tune_e.jsonl --quiet
