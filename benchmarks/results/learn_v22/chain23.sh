#!/bin/bash
# the session's second timing run, under the timing lock, at the commit in /tmp/lrn: a fresh
# 15-minute learn whose sampled LSTMs are measured in int8 too (retype's integer LSTM)
cd /tmp/v22
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run learn_v23a $T learn -o learn_v23a.json.gz --quiet
