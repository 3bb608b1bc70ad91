# The tuning half of this session's runs (chain11.sh), before the test read. Paths are the
# session's: /tmp/v19 held the records and models, /tmp/v18 the tuning records of the sessions
# before (benchmarks/results/learn_v18-v20).
set -e
P=/work/main/.venv/bin/python
V=/tmp/v19
F=$V/v21final
cd /work/main
date -u; uptime; git rev-parse --short HEAD
{ date -u; $P -m tacopt.benchmarks bench_learn --half tune --model $V/learn_v21a.json.gz $V/learn_s8a_v12.json.gz --test /tmp/v18/z4_tune_e.jsonl /tmp/v18/z4_tune_f.jsonl; } > $F/bench_learn_tune_fresh.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --half tune --per-kind --model $V/adapt_bi_v21a.json.gz $V/adapt_bi_v21m4a.json.gz $V/adapt_bi_v21m4b.json.gz --test $V/bi_tune_a.jsonl $V/bi_tune_b.jsonl; } > $F/bench_learn_tune_builtin.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --half tune --model $V/adapt_t2_v21a.json.gz $V/adapt_t2_v21m4a.json.gz $V/adapt_t2_v21m4b.json.gz --test $V/t2_tune_a.jsonl $V/t2_tune_b.jsonl; } > $F/bench_learn_tune_2threads.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --half tune --model $V/adapt_z4_v21a.json.gz --test /tmp/v18/z4_tune_e.jsonl /tmp/v18/z4_tune_f.jsonl; } > $F/bench_learn_tune_zen3_to_zen4.txt 2>&1
date -u; echo done
