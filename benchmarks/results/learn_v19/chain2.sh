#!/bin/bash
# Second timing chain: more 2-thread adaptation runs and the tuning half on 2 threads again.
cd /tmp/lrn
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v19
B=$O/base_z4i.json.gz
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
TUNE=$(python3 -c "import json;print(' '.join('/work/shared/zoo/'+f for f in json.load(open('benchmarks/zoo_split.json'))['tune']))")
step adapt_t2_b $T learn --from $B --threads 2 -o $O/adapt_t2_b.json.gz --records $O/adapt_t2_b.records.jsonl --quiet
step t2_tune_b $T measure $TUNE --threads 2 --out $O/t2_tune_b.jsonl --quiet
step adapt_t2_c $T learn --from $B --threads 2 -o $O/adapt_t2_c.json.gz --records $O/adapt_t2_c.records.jsonl --quiet
step bi_tune_b $T measure $TUNE --resolver builtin --out $O/bi_tune_b.jsonl --quiet
