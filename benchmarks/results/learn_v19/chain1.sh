#!/bin/bash
# First timing chain of the 2026-11-27 09:07 session, under the timing lock: the second device
# pairs on this machine (Zen 4): XNNPACK 1 thread -> builtin kernels, -> XNNPACK 2 threads.
cd /tmp/lrn
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v19
B=$O/base_z4i.json.gz
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
TUNE=$(python3 -c "import json;print(' '.join('/work/shared/zoo/'+f for f in json.load(open('benchmarks/zoo_split.json'))['tune']))")
step bi_tune_a $T measure $TUNE --resolver builtin --out $O/bi_tune_a.jsonl --quiet
step adapt_bi_a $T learn --from $B --resolver builtin -o $O/adapt_bi_a.json.gz --records $O/adapt_bi_a.records.jsonl --quiet
step t2_tune_a $T measure $TUNE --threads 2 --out $O/t2_tune_a.jsonl --quiet
step adapt_t2_a $T learn --from $B --threads 2 -o $O/adapt_t2_a.json.gz --records $O/adapt_t2_a.records.jsonl --quiet
step adapt_bi_b $T learn --from $B --resolver builtin -o $O/adapt_bi_b.json.gz --records $O/adapt_bi_b.records.jsonl --quiet
step learn_bi $T learn --resolver builtin -o $O/learn_bi.json.gz --records $O/learn_bi.records.jsonl --quiet
