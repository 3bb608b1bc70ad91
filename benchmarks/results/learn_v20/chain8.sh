#!/bin/bash
# validation of the committed code: 3-minute adaptations, two runs per device pair
cd /tmp/v19
log=chain.log
run() { name=$1; shift; echo "$name start $(date +%T) $(uptime)" >> $log; "$@" > $name.log 2>&1; echo "$name end rc=$? $(date +%T) $(uptime)" >> $log; }
cd /tmp/lrn && git checkout -q -- . && git fetch -q /work/main main && git checkout -q FETCH_HEAD && .venv/bin/pip install -q -e . --no-deps && cd /tmp/v19
T=/tmp/lrn/.venv/bin/tacopt
echo "commit $(cd /tmp/lrn && git log --oneline -1 | cut -c1-7)" >> $log
run adapt_bi_v20a $T learn --from base_z4i.json.gz -o adapt_bi_v20a.json.gz --resolver builtin --quiet
run adapt_t2_v20a $T learn --from base_z4i.json.gz -o adapt_t2_v20a.json.gz --threads 2 --quiet
run adapt_z4_v20a $T learn --from /tmp/lrn/cost_models/data/learned_cpu.json.gz -o adapt_z4_v20a.json.gz --quiet
run adapt_bi_v20b $T learn --from base_z4i.json.gz -o adapt_bi_v20b.json.gz --resolver builtin --quiet
run adapt_t2_v20b $T learn --from base_z4i.json.gz -o adapt_t2_v20b.json.gz --threads 2 --quiet
run adapt_z4_v20b $T learn --from /tmp/lrn/cost_models/data/learned_cpu.json.gz -o adapt_z4_v20b.json.gz --quiet
