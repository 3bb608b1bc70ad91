# The final evaluation: the models of DECLARED.md, fitted / adapted at the final code, as run.
# Paths are the session's: /tmp/v18 held this session's records, /tmp/w18 the other sessions'
# records unzipped, with `absorbed` added by `python -m tacopt.benchmarks add_absorbed` where they
# lacked it (test_rc3 / test_rc4 / test_builtin / test_xnn2 -> *_abs.jsonl).
set -e
P=/work/main/.venv/bin/python
T=/work/main/.venv/bin/tacopt
R=/work/main/benchmarks/results
V=/tmp/v18
W=/tmp/w18
mkdir -p $V/final && cd $V/final
date -u; uptime; git -C /work/main rev-parse --short HEAD
for n in learn_z4g learn_z4h learn_z4i; do $T fit $V/$n.records.jsonl -o $n.json.gz > /dev/null; done
$T fit $W/learn_z4f.records.jsonl -o learn_z4f.json.gz > /dev/null
SHIP=/work/main/cost_models/data/learned_cpu.json.gz
$P $R/learn_v14/readapt.py $SHIP $V/adapt_z4f.records.jsonl adapt_z4f.json.gz
for n in adapt_z4e adapt_z4d adapt_builtin adapt_xnn2; do
  $P $R/learn_v14/readapt.py $SHIP $W/$n.records.jsonl $n.json.gz
done
cd /work/main
TEST="$W/z4_test_a.jsonl $W/z4_test_b.jsonl $W/z4_test_c.jsonl $V/z4_test_d.jsonl"
TUNE="$W/z4_tune_b_abs.jsonl $W/z4_tune_d.jsonl $V/z4_tune_e.jsonl $V/z4_tune_f.jsonl"
F=$V/final
date -u
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model $F/learn_z4i.json.gz $F/learn_z4g.json.gz $F/learn_z4h.json.gz $F/learn_z4f.json.gz $F/adapt_z4f.json.gz $F/adapt_z4e.json.gz $F/adapt_z4d.json.gz $SHIP --test $TEST; } > $F/bench_learn_test_half_z4.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model $SHIP --test $W/test_rc3_abs.jsonl $W/test_rc4_abs.jsonl; } > $F/bench_learn_test_half_zen3_shipped.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model $F/adapt_builtin.json.gz --test $W/test_builtin_abs.jsonl; $P -m tacopt.benchmarks bench_learn --model $F/adapt_xnn2.json.gz --test $W/test_xnn2_abs.jsonl; } > $F/bench_learn_adapt_pairs_test.txt 2>&1
{ date -u; $P -m tacopt.benchmarks check_drift compare $W/z4_test_c.jsonl $V/z4_test_d.jsonl; } > $F/drift_test_c_d.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --half tune --model $F/learn_z4i.json.gz $F/learn_z4g.json.gz $F/learn_z4h.json.gz $F/learn_z4f.json.gz $F/adapt_z4f.json.gz $F/adapt_z4e.json.gz $F/adapt_z4d.json.gz $SHIP --test $TUNE; } > $F/bench_learn_tune_half_z4.txt 2>&1
date -u; echo done
