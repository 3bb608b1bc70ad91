#!/bin/bash
# the 47 chain models of the learns that move over 16 MB, rebuilt from their seeds and timed
# twice with `tacopt measure` (16 samples over 8 instances, as the zoo's records), one run after
# the other under the timing lock: how far a chain's whole-model timing moves between runs
cd /tmp/v22
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run chains_m1 $T measure chains --out chains_m1.jsonl --quiet
run chains_m2 $T measure chains --out chains_m2.jsonl --quiet
