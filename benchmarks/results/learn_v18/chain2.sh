#!/bin/bash
# Second timing chain of the 2026-11-27 07:04 session, under the timing lock from /tmp/lrn (commit in chain.log).
cd /tmp/lrn
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v18
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
step learn_z4h $T learn -o $O/learn_z4h.json.gz --records $O/learn_z4h.records.jsonl --quiet
step adapt_z4f $T learn --from /tmp/w18/shipped11.json.gz -o $O/adapt_z4f.json.gz --records $O/adapt_z4f.records.jsonl --quiet
