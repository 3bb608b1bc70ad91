# The final evaluation: the models of DECLARED.md, fitted / adapted at the final code, as run.
# Paths are the session's: /tmp/v17 held this folder's records unzipped (and the four earlier
# Zen 4 learns' records of learn_v15 / learn_v16), /tmp/w17 the other sessions' test halves, with
# `absorbed` added by `python -m tacopt.benchmarks add_absorbed` where they lacked it.
set -e
P=/work/main/.venv/bin/python
T=/work/main/.venv/bin/tacopt
R=/work/main/benchmarks/results
V=/tmp/v17
W=/tmp/w17
mkdir -p $V/final && cd $V/final
date -u; uptime
# the learns, refitted (the four earlier ones for the tuning half only)
for n in learn_z4 learn_z4b learn_z4c learn_z4d learn_z4e learn_z4f; do
  $T fit $V/$n.records.jsonl -o $n.json.gz > /dev/null
done
SHIP=/work/main/cost_models/data/learned_cpu.json.gz
for n in adapt_z4 adapt_z4b adapt_z4c adapt_z4d adapt_z4e; do
  $P $R/learn_v14/readapt.py $SHIP $V/$n.records.jsonl $n.json.gz
done
$P $R/learn_v14/readapt.py $SHIP $W/adapt_builtin.records.jsonl adapt_builtin.json.gz
$P $R/learn_v14/readapt.py $SHIP $W/adapt_xnn2.records.jsonl adapt_xnn2.json.gz
cd /work/main
TEST="$W/z4_test_a.jsonl $W/z4_test_b.jsonl $V/t/z4_test_c.jsonl"
TUNE="$V/z4_tune_a_abs.jsonl $V/z4_tune_c.jsonl $V/t/z4_tune_d.jsonl"
F=$V/final
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model $F/learn_z4f.json.gz $F/adapt_z4e.json.gz $F/adapt_z4d.json.gz $SHIP --test $TEST; } > $F/bench_learn_test_half_z4.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model $SHIP --test $W/test_rc3_abs.jsonl $W/test_rc4_abs.jsonl; } > $F/bench_learn_test_half_zen3_shipped.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model $F/adapt_builtin.json.gz --test $W/test_builtin_abs.jsonl; $P -m tacopt.benchmarks bench_learn --model $F/adapt_xnn2.json.gz --test $W/test_xnn2_abs.jsonl; } > $F/bench_learn_adapt_pairs_test.txt 2>&1
{ date -u; $P -m tacopt.benchmarks check_drift compare $W/z4_test_b.jsonl $V/t/z4_test_c.jsonl; } > $F/drift_test_b_c.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --half tune --model $F/learn_z4.json.gz $F/learn_z4b.json.gz $F/learn_z4c.json.gz $F/learn_z4d.json.gz $F/learn_z4e.json.gz $F/learn_z4f.json.gz $F/adapt_z4.json.gz $F/adapt_z4b.json.gz $F/adapt_z4c.json.gz $F/adapt_z4d.json.gz $F/adapt_z4e.json.gz $SHIP --test $TUNE; } > $F/bench_learn_tune_half_z4.txt 2>&1
echo done
