#!/bin/bash
# after the test read, tuning half only: a builtin adaptation measuring the full 3 minutes
# (--minutes 4.25: 75 s kept for the fit), at the committed code
cd /tmp/v19
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run adapt_bi_m3 $T learn --from base_z4i.json.gz -o adapt_bi_m3.json.gz --resolver builtin --minutes 4.25 --quiet
