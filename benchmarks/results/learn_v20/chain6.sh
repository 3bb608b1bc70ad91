#!/bin/bash
# experiment: fewer samples per op (4 over 2 instances) in adaptation; a fresh learn with 8 over 4
cd /tmp/v19
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "exp samples4 / fresh samples8 $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7) + env knobs" >> $log
TACOPT_SAMPLES=4 TACOPT_ROUNDS=2 run adapt_t2_s4a $T learn --from base_z4i.json.gz -o adapt_t2_s4a.json.gz --threads 2 --quiet
TACOPT_SAMPLES=4 TACOPT_ROUNDS=2 run adapt_bi_s4a $T learn --from base_z4i.json.gz -o adapt_bi_s4a.json.gz --resolver builtin --quiet
TACOPT_SAMPLES=8 TACOPT_ROUNDS=4 run learn_s8a $T learn -o learn_s8a.json.gz --quiet
