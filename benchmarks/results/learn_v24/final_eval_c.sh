# The read of DECLARED.md's addendum: learn_v24c, as the learn wrote it, on the test half and on
# its float16 / sparse variants, once (paths as in final_eval.sh); then the tuning half.
set -e
P=/work/main/.venv/bin/python
Z="/tmp/w18/z4_test_a.jsonl /tmp/w18/z4_test_b.jsonl /tmp/w18/z4_test_c.jsonl /tmp/v18/z4_test_d.jsonl"
M=/tmp/v24/learn_v24c.json.gz
O=/work/main/benchmarks/results/learn_v24
cd /work/main
date -u; uptime; git rev-parse --short HEAD
{ date -u; uptime; $P -m tacopt.benchmarks bench_learn --model $M --test $Z; } > $O/bench_learn_test_c.txt 2>&1
{ date -u; uptime; $P -m tacopt.benchmarks bench_learn --model $M --test /tmp/v24/z4_variants_a.jsonl; } > $O/bench_learn_variants_c.txt 2>&1
{ date -u; uptime; $P -m tacopt.benchmarks bench_learn --half tune --model $M --test /tmp/v18/z4_tune_e.jsonl /tmp/v18/z4_tune_f.jsonl; } > $O/bench_learn_tune_c.txt 2>&1
date -u; echo done
