#!/bin/bash
# timing runs of this session, one after another under the timing lock, at the commit in /tmp/lrn:
# two fresh 15-minute learns with the repeated network chains and the in-model spill
cd /tmp/v22
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run learn_v22a $T learn -o learn_v22a.json.gz --quiet
run learn_v22b $T learn -o learn_v22b.json.gz --quiet
