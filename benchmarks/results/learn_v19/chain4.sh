#!/bin/bash
# Fourth timing chain: a fresh 3-minute learn on the builtin kernels (the plan of a fresh learn,
# not the base's uncertainty), to compare with the 3-minute adaptations on the tuning half.
cd /tmp/lrn
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v19
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
step learn3_bi $T learn --minutes 3 --resolver builtin -o $O/learn3_bi.json.gz --records $O/learn3_bi.records.jsonl --quiet
