# The final evaluation of the 2026-11-27 20:48 session, as DECLARED.md fixed it, read once. Paths
# are the session's: /tmp/v25 held this session's records and models, /tmp/v22 and /tmp/v24
# the older learns, /tmp/w18 and /tmp/v18 the test half measured by earlier sessions.
set -e
P=/work/main/.venv/bin/python
NM=/work/main/benchmarks/results/learn_v25/no_memory.py
Z="/tmp/w18/z4_test_a.jsonl /tmp/w18/z4_test_b.jsonl /tmp/w18/z4_test_c.jsonl /tmp/v18/z4_test_d.jsonl /tmp/v25/z4_test_e.jsonl"
V="/tmp/v24/z4_variants_a.jsonl /tmp/v25/z4_variants_b.jsonl"
NEW="/tmp/v25/learn_v25a.json.gz /tmp/v25/learn_v25b.json.gz /tmp/v25/learn_v25c.json.gz"
OLD="/tmp/v22/learn_v22a.json.gz /tmp/v22/learn_v22b.json.gz /tmp/v22/learn_v23a.json.gz /tmp/v24/learn_v24a.json.gz /tmp/v24/learn_v24b.json.gz /tmp/v24/learn_v24c.json.gz"
NOMEM="/tmp/v25/nomem_v25a.json.gz /tmp/v25/nomem_v25b.json.gz /tmp/v25/nomem_v25c.json.gz"
O=/work/main/benchmarks/results/learn_v25
cd /work/main
head() { date -u; uptime; git rev-parse --short HEAD; }
{ head; $P -m tacopt.benchmarks bench_learn --model $NEW $OLD --test $Z; } > $O/bench_learn_test.txt 2>&1
{ head; $P -m tacopt.benchmarks bench_learn --model $NEW $OLD --test $V; } > $O/bench_learn_variants.txt 2>&1
{ head; $P $NM bench_learn --model $NEW --test /tmp/v25/z4_test_e.jsonl /tmp/v25/z4_variants_b.jsonl; } > $O/bench_learn_test_eval_no_memory.txt 2>&1
{ head; $P $NM bench_learn --model $NOMEM --test $Z $V; } > $O/bench_learn_test_no_memory.txt 2>&1
date -u; echo done
