#!/bin/bash
# the 2026-11-27 20:48 session's first timing run, under the timing lock, at the commit in
# /tmp/lrn (07dd4c5: whole models timed with the memory reference beside them): the tuning half,
# three fresh 15-minute learns, the test half and its float16 / sparse variants between them
cd /tmp/v25
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
P=/tmp/lrn/.venv/bin/python
T=/tmp/lrn/.venv/bin/tacopt
Z=/work/shared/zoo
half() { $P -c "import json; print(' '.join('$Z/' + f for f in json.load(open('/tmp/lrn/benchmarks/zoo_split.json'))['$1']))"; }
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run z4_tune_g $T measure $(half tune) --out z4_tune_g.jsonl --quiet
run learn_v25a $T learn -o learn_v25a.json.gz --quiet
run z4_test_e $T measure $(half test) --out z4_test_e.jsonl --quiet
run learn_v25b $T learn -o learn_v25b.json.gz --quiet
run z4_variants_b $T measure /tmp/v24/variants --out z4_variants_b.jsonl --quiet
run learn_v25c $T learn -o learn_v25c.json.gz --quiet
