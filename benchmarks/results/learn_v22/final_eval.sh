# The final evaluation of the 2026-11-27 16:27 session: the models of DECLARED.md, as the learns
# wrote them, on the test half, read once. Paths are the session's: /tmp/v22 held the records and
# models, /tmp/w18 and /tmp/v18 the test half measured by the sessions before
# (benchmarks/results/learn_v15-v19).
set -e
P=/work/main/.venv/bin/python
V=/tmp/v22
Z="/tmp/w18/z4_test_a.jsonl /tmp/w18/z4_test_b.jsonl /tmp/w18/z4_test_c.jsonl /tmp/v18/z4_test_d.jsonl"
cd /work/main
date -u; uptime; git rev-parse --short HEAD
{ date -u; $P -m tacopt.benchmarks bench_learn --model $V/learn_v22a.json.gz $V/learn_v22b.json.gz --test $Z; } > $V/bench_learn_test_fresh.txt 2>&1
date -u; echo done
