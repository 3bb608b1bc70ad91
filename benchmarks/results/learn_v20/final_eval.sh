# The final evaluation of the 2026-11-27 11:39 session: the models of DECLARED.md, as the runs
# wrote them, on the test half, read once. Paths are the session's: /tmp/v19 held this session's
# records and models, /tmp/v18 and /tmp/w18 the test half measured by the sessions before
# (benchmarks/results/learn_v15-v19).
set -e
P=/work/main/.venv/bin/python
V=/tmp/v19
F=$V/v20final
Z="/tmp/w18/z4_test_a.jsonl /tmp/w18/z4_test_b.jsonl /tmp/w18/z4_test_c.jsonl /tmp/v18/z4_test_d.jsonl"
cd /work/main
date -u; uptime; git rev-parse --short HEAD
{ date -u; $P -m tacopt.benchmarks bench_learn --model $V/learn_s8a.json.gz $V/learn_v20b.json.gz $V/learn_s4a.json.gz --test $Z; } > $F/bench_learn_test_fresh.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model $V/adapt_bi_v20a.json.gz $V/adapt_bi_v20b.json.gz --test $V/bi_test_a.jsonl; } > $F/bench_learn_test_builtin.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model $V/adapt_t2_v20a.json.gz $V/adapt_t2_v20b.json.gz --test $V/t2_test_a.jsonl $V/t2_test_b.jsonl; } > $F/bench_learn_test_2threads.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model $V/adapt_z4_v20a.json.gz $V/adapt_z4_v20b.json.gz --test $Z; } > $F/bench_learn_test_zen3_to_zen4.txt 2>&1
date -u; echo done
