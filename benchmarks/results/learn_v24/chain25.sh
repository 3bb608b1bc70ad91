#!/bin/bash
# the session's second timing run, under the timing lock, at the commit in /tmp/lrn (HEAD of the
# session before, 92b5526): two fresh 15-minute learns, one after the other, to see how often a
# fresh learn's whole-model terms land where the zoo's models run
cd /tmp/v24
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run learn_v24a $T learn -o learn_v24a.json.gz --quiet
run learn_v24b $T learn -o learn_v24b.json.gz --quiet
