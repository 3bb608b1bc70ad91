#!/bin/bash
# Third timing chain of the 2026-11-27 07:04 session, under the timing lock: the last learn at the
# final sampler code, then the test and tuning halves (commit in chain.log).
cd /tmp/lrn && git fetch -q /work/main main && git checkout -q f98e9fc && .venv/bin/pip install -q -e . --no-deps
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v18
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
TEST=$(python3 -c "import json;print(' '.join('/work/shared/zoo/'+f for f in json.load(open('benchmarks/zoo_split.json'))['test']))")
TUNE=$(python3 -c "import json;print(' '.join('/work/shared/zoo/'+f for f in json.load(open('benchmarks/zoo_split.json'))['tune']))")
step learn_z4i $T learn -o $O/learn_z4i.json.gz --records $O/learn_z4i.records.jsonl --quiet
step z4_test_d $T measure $TEST --out $O/z4_test_d.jsonl --quiet
step z4_tune_f $T measure $TUNE --out $O/z4_tune_f.jsonl --quiet
