# The final evaluation of the 2026-11-27 09:07 session: the models of DECLARED.md, fitted /
# adapted at the final code, on the test half, as run. Paths are the session's: /tmp/v19 held
# this session's records, /tmp/v18 and /tmp/w18 the sessions' before unzipped (learn_v18 /
# learn_v15-17 / learn_v13 / learn_v10 in benchmarks/results; `_abs` files have `absorbed` added
# by `python -m tacopt.benchmarks add_absorbed`).
set -e
P=/work/main/.venv/bin/python
T=/work/main/.venv/bin/tacopt
R=/work/main/benchmarks/results
V=/tmp/v19
W=/tmp/w18
mkdir -p $V/final && cd $V/final
date -u; uptime; git -C /work/main rev-parse --short HEAD
$T fit /tmp/v18/learn_z4i.records.jsonl -o learn_z4i.json.gz > /dev/null
$T fit $V/learn_bi.records.jsonl -o learn_bi.json.gz > /dev/null
B=$V/final/learn_z4i.json.gz
SHIP=/work/main/cost_models/data/learned_cpu.json.gz
for n in adapt_bi_a adapt_bi_b adapt_bi_c adapt_t2_a adapt_t2_b adapt_t2_c; do
  $P $R/learn_v14/readapt.py $B $V/$n.records.jsonl $n.json.gz
done
$P $R/learn_v14/readapt.py $SHIP /tmp/v18/adapt_z4f.records.jsonl adapt_z4f.json.gz
for n in adapt_z4d adapt_z4e adapt_builtin adapt_xnn2; do
  $P $R/learn_v14/readapt.py $SHIP $W/$n.records.jsonl $n.json.gz
done
cd /work/main
F=$V/final
date -u
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model $B $F/adapt_bi_a.json.gz $F/adapt_bi_b.json.gz $F/adapt_bi_c.json.gz $F/learn_bi.json.gz --test $V/bi_test_a.jsonl; } > $F/bench_learn_test_builtin.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model $B $F/adapt_t2_a.json.gz $F/adapt_t2_b.json.gz $F/adapt_t2_c.json.gz --test $V/t2_test_a.jsonl $V/t2_test_b.jsonl; } > $F/bench_learn_test_2threads.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model $F/adapt_z4d.json.gz $F/adapt_z4e.json.gz $F/adapt_z4f.json.gz $SHIP --test $W/z4_test_a.jsonl $W/z4_test_b.jsonl $W/z4_test_c.jsonl /tmp/v18/z4_test_d.jsonl; } > $F/bench_learn_test_zen3_to_zen4.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model $F/adapt_builtin.json.gz --test $W/test_builtin_abs.jsonl; $P -m tacopt.benchmarks bench_learn --model $F/adapt_xnn2.json.gz --test $W/test_xnn2_abs.jsonl; } > $F/bench_learn_test_zen3_pairs.txt 2>&1
{ date -u; for p in "bi_tune_a bi_tune_b" "t2_tune_a t2_tune_b" "t2_test_a t2_test_b"; do set -- $p; echo "== $1 vs $2"; $P -m tacopt.benchmarks check_drift compare $V/$1.jsonl $V/$2.jsonl; done; } > $F/drift_new_devices.txt 2>&1
date -u; echo done
