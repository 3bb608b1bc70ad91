#!/bin/bash
# run_knobs.sh NAME MINUTES KNOBS_JSON: one learn_knobs.py run under the timing lock
exec 9>/tmp/tacopt-timing.lock; flock 9
rm -f $1.json.gz $1.records.jsonl*
echo "start $1 $(date +%T) $(uptime)" > $1.log
python learn_knobs.py $1.json.gz $2 "$3" 2>&1 | grep -v "^INFO\|^WARN\|it/s\]" >> $1.log
echo "end $1 $(date +%T) $(uptime)" >> $1.log
