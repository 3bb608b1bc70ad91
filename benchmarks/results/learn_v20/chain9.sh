#!/bin/bash
# validation of the committed code: a fresh 15-minute learn (8 samples over 4 instances)
cd /tmp/v19
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run learn_v20b $T learn -o learn_v20b.json.gz --quiet
