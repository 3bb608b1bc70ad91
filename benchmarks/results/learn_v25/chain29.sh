#!/bin/bash
# the session's second timing run, under the timing lock, at the commit in /tmp/lrn (07dd4c5):
# the test half measured again, two more fresh learns, the test half once more
cd /tmp/v25
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
P=/tmp/lrn/.venv/bin/python
T=/tmp/lrn/.venv/bin/tacopt
Z=/work/shared/zoo
half() { $P -c "import json; print(' '.join('$Z/' + f for f in json.load(open('/tmp/lrn/benchmarks/zoo_split.json'))['$1']))"; }
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run z4_test_f $T measure $(half test) --out z4_test_f.jsonl --quiet
run learn_v25d $T learn -o learn_v25d.json.gz --quiet
run learn_v25e $T learn -o learn_v25e.json.gz --quiet
run z4_test_g $T measure $(half test) --out z4_test_g.jsonl --quiet
