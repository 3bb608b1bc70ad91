#!/bin/bash
# timing runs of this session, one after another under the timing lock, at the commit in /tmp/lrn:
# 3-minute adaptations (2.1 min measuring) and 4-minute ones (3 min measuring) of learn_z4i to
# the builtin kernels and to 2 threads, a 3-minute Zen 3 -> Zen 4 adaptation of the shipped
# model, and a fresh 15-minute learn
cd /tmp/v19
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run adapt_bi_v21a $T learn --from base_z4i.json.gz -o adapt_bi_v21a.json.gz --resolver builtin --quiet
run adapt_bi_v21m4a $T learn --from base_z4i.json.gz -o adapt_bi_v21m4a.json.gz --resolver builtin --minutes 4 --quiet
run adapt_t2_v21a $T learn --from base_z4i.json.gz -o adapt_t2_v21a.json.gz --threads 2 --quiet
run adapt_t2_v21m4a $T learn --from base_z4i.json.gz -o adapt_t2_v21m4a.json.gz --threads 2 --minutes 4 --quiet
run adapt_z4_v21a $T learn --from /tmp/lrn/cost_models/data/learned_cpu.json.gz -o adapt_z4_v21a.json.gz --quiet
run adapt_bi_v21m4b $T learn --from base_z4i.json.gz -o adapt_bi_v21m4b.json.gz --resolver builtin --minutes 4 --quiet
run adapt_t2_v21m4b $T learn --from base_z4i.json.gz -o adapt_t2_v21m4b.json.gz --threads 2 --minutes 4 --quiet
run learn_v21a $T learn -o learn_v21a.json.gz --quiet
