#!/bin/bash
# Timing chain 2 of the 2026-11-27 05:00 session, under the timing lock from /tmp/lrn (commit in chain.log).
cd /tmp/lrn
T=/tmp/lrn/.venv/bin/tacopt
O=/tmp/v17/t
step() { name=$1; shift; echo "$name start $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; "$@" > $O/$name.log 2>&1; echo "$name end rc=$? $(date -u +%H:%M:%S) $(uptime)" >> $O/chain.log; }
echo "commit $(git rev-parse --short HEAD)" >> $O/chain.log
step learn_z4f $T learn -o $O/learn_z4f.json.gz --records $O/learn_z4f.records.jsonl --quiet
