# The second read of the 2026-11-27 20:48 session (DECLARED.md, item 5), once. Paths as in
# final_eval.sh.
set -e
P=/work/main/.venv/bin/python
E="/tmp/v25/z4_test_e.jsonl /tmp/v25/z4_test_f.jsonl /tmp/v25/z4_test_g.jsonl"
OLDZ="/tmp/w18/z4_test_a.jsonl /tmp/w18/z4_test_b.jsonl /tmp/w18/z4_test_c.jsonl /tmp/v18/z4_test_d.jsonl"
NEW="/tmp/v25/learn_v25a.json.gz /tmp/v25/learn_v25b.json.gz /tmp/v25/learn_v25c.json.gz /tmp/v25/learn_v25d.json.gz /tmp/v25/learn_v25e.json.gz"
OLD="/tmp/v22/learn_v22a.json.gz /tmp/v22/learn_v22b.json.gz /tmp/v22/learn_v23a.json.gz /tmp/v24/learn_v24a.json.gz /tmp/v24/learn_v24b.json.gz /tmp/v24/learn_v24c.json.gz"
TWO="/tmp/v25/learn_v25d.json.gz /tmp/v25/learn_v25e.json.gz"
O=/work/main/benchmarks/results/learn_v25
cd /work/main
head() { date -u; uptime; git rev-parse --short HEAD; }
{ head; $P -m tacopt.benchmarks bench_learn --model $NEW $OLD --test $E; } > $O/bench_learn_test_2.txt 2>&1
{ head; $P -m tacopt.benchmarks bench_learn --model $TWO --test $OLDZ /tmp/v24/z4_variants_a.jsonl /tmp/v25/z4_variants_b.jsonl; } > $O/bench_learn_test_2_older.txt 2>&1
{ head; $P -m tacopt.benchmarks bench_learn --model $NEW $OLD --test /tmp/v25/z4_variants_b.jsonl; } > $O/bench_learn_variants_2.txt 2>&1
date -u; echo done
