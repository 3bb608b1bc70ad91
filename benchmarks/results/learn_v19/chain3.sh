#!/bin/bash
# Third timing chain: the test half on the builtin kernels and on 2 threads (twice), and a third
# 3-minute builtin adaptation at the final adaptation code (a031dbe).
cd /tmp/lrn
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v19
B=$O/base_z4i.json.gz
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
TEST=$(python3 -c "import json;print(' '.join('/work/shared/zoo/'+f for f in json.load(open('benchmarks/zoo_split.json'))['test']))")
step bi_test_a $T measure $TEST --resolver builtin --out $O/bi_test_a.jsonl --quiet
step t2_test_a $T measure $TEST --threads 2 --out $O/t2_test_a.jsonl --quiet
step adapt_bi_c $T learn --from $B --resolver builtin -o $O/adapt_bi_c.json.gz --records $O/adapt_bi_c.records.jsonl --quiet
step t2_test_b $T measure $TEST --threads 2 --out $O/t2_test_b.jsonl --quiet
