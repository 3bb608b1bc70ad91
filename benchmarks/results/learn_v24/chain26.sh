#!/bin/bash
# the session's third timing run, under the timing lock, at the commit in /tmp/lrn (92b5526):
# float16 and sparse variants of the test half's float models (zoo_variants), measured once by
# `tacopt measure` as the zoo's records are (16 samples over 8 instances, two passes)
cd /tmp/v24
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
P=/tmp/lrn/.venv/bin/python
T=/tmp/lrn/.venv/bin/tacopt
Z=/work/shared/zoo
models=$($P -c "import json; print(' '.join('$Z/' + f for f in json.load(open('/tmp/lrn/benchmarks/zoo_split.json'))['test'] if 'float32' in f))")
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run variants $P -m tacopt.benchmarks zoo_variants variants $models
run z4_variants_a $T measure variants --out z4_variants_a.jsonl --quiet
