#!/bin/bash
# the session's fourth timing run, under the timing lock, at the commit in /tmp/lrn: a third fresh
# 15-minute learn of the session (declared for the test half before it ran, DECLARED.md)
cd /tmp/v24
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run learn_v24c $T learn -o learn_v24c.json.gz --quiet
