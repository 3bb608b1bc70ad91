# The final evaluation of the 2026-11-27 18:53 session: the models of DECLARED.md, as the learns
# wrote them, on the test half and on its float16 / sparse variants, read once. Paths are the
# session's: /tmp/v24 and /tmp/v22 held the records and models, /tmp/w18 and /tmp/v18 the test
# half measured by the sessions before (benchmarks/results/learn_v15-v19).
set -e
P=/work/main/.venv/bin/python
Z="/tmp/w18/z4_test_a.jsonl /tmp/w18/z4_test_b.jsonl /tmp/w18/z4_test_c.jsonl /tmp/v18/z4_test_d.jsonl"
M3="/tmp/v22/learn_v23a.json.gz /tmp/v24/learn_v24a.json.gz /tmp/v24/learn_v24b.json.gz"
M5="/tmp/v22/learn_v22a.json.gz /tmp/v22/learn_v22b.json.gz $M3"
O=/work/main/benchmarks/results/learn_v24
cd /work/main
date -u; uptime; git rev-parse --short HEAD
{ date -u; uptime; $P -m tacopt.benchmarks bench_learn --model $M3 --test $Z; } > $O/bench_learn_test.txt 2>&1
{ date -u; uptime; $P -m tacopt.benchmarks bench_learn --model $M5 --test /tmp/v24/z4_variants_a.jsonl; } > $O/bench_learn_variants.txt 2>&1
date -u; echo done
