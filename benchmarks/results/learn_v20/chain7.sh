#!/bin/bash
# experiment: a fresh learn with 4 samples over 2 instances
cd /tmp/v19
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "exp fresh samples4 $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7) + env knobs" >> $log
TACOPT_SAMPLES=4 TACOPT_ROUNDS=2 run learn_s4a $T learn -o learn_s4a.json.gz --quiet
