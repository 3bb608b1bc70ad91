# The final evaluation of the 2026-11-27 14:19 session: the models of DECLARED.md, as the runs
# wrote them (learn_s8a_v12: the session before's learn_s8a records refitted at ac15f9c), on the
# test half, read once. Paths are the session's: /tmp/v19 held the records and models, /tmp/v18
# and /tmp/w18 the test half measured by the sessions before (benchmarks/results/learn_v15-v19).
set -e
P=/work/main/.venv/bin/python
V=/tmp/v19
F=$V/v21final
Z="/tmp/w18/z4_test_a.jsonl /tmp/w18/z4_test_b.jsonl /tmp/w18/z4_test_c.jsonl /tmp/v18/z4_test_d.jsonl"
cd /work/main
date -u; uptime; git rev-parse --short HEAD
{ date -u; $P -m tacopt.benchmarks bench_learn --model $V/learn_v21a.json.gz $V/learn_s8a_v12.json.gz --test $Z; } > $F/bench_learn_test_fresh.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model $V/adapt_bi_v21a.json.gz $V/adapt_bi_v21m4a.json.gz $V/adapt_bi_v21m4b.json.gz --test $V/bi_test_a.jsonl; } > $F/bench_learn_test_builtin.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model $V/adapt_t2_v21a.json.gz $V/adapt_t2_v21m4a.json.gz $V/adapt_t2_v21m4b.json.gz --test $V/t2_test_a.jsonl $V/t2_test_b.jsonl; } > $F/bench_learn_test_2threads.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model $V/adapt_z4_v21a.json.gz --test $Z; } > $F/bench_learn_test_zen3_to_zen4.txt 2>&1
date -u; echo done
