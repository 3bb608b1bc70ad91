# The final evaluation: the models fixed in DECLARED.md, at the final code (396c6fe), as run.
# Paths are the session's: /tmp/v16 held this folder's records unzipped, /tmp/w the other
# sessions' (README), with `absorbed` added by `python -m tacopt.benchmarks add_absorbed`.
set -e
cd /tmp/v16
P=/work/main/.venv/bin/python
R=/work/main/benchmarks/results
W=/tmp/w
date -u; uptime
/work/main/.venv/bin/tacopt fit learn_z4d.records.jsonl -o learn_z4d_final.json.gz
$P $R/learn_v14/readapt.py /work/main/cost_models/data/learned_cpu.json.gz adapt_z4d.records.jsonl adapt_z4d_final.json.gz
$P $R/learn_v14/readapt.py /work/main/cost_models/data/learned_cpu.json.gz $W/adapt_builtin.records.jsonl adapt_builtin_final.json.gz
$P $R/learn_v14/readapt.py /work/main/cost_models/data/learned_cpu.json.gz $W/adapt_xnn2.records.jsonl adapt_xnn2_final.json.gz
cd /work/main
{ date -u; $P -m tacopt.benchmarks bench_learn --per-kind --model /tmp/v16/learn_z4d_final.json.gz /tmp/v16/adapt_z4d_final.json.gz cost_models/data/learned_cpu.json.gz --test /tmp/v16/z4_test_a.jsonl /tmp/v16/z4_test_b.jsonl; } > /tmp/v16/bench_learn_test_half_z4.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model cost_models/data/learned_cpu.json.gz --test $W/test_rc3_abs.jsonl $W/test_rc4_abs.jsonl; } > /tmp/v16/bench_learn_test_half_zen3_shipped.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --model /tmp/v16/adapt_builtin_final.json.gz --test $W/test_builtin_abs.jsonl; $P -m tacopt.benchmarks bench_learn --model /tmp/v16/adapt_xnn2_final.json.gz --test $W/test_xnn2_abs.jsonl; } > /tmp/v16/bench_learn_adapt_pairs_test.txt 2>&1
{ date -u; $P -m tacopt.benchmarks check_drift compare /tmp/v16/z4_test_a.jsonl /tmp/v16/z4_test_b.jsonl; } > /tmp/v16/drift_test_a_b.txt 2>&1
{ date -u; $P -m tacopt.benchmarks bench_learn --half tune --model /tmp/v16/learn_z4d_final.json.gz /tmp/v16/adapt_z4d_final.json.gz cost_models/data/learned_cpu.json.gz --test $W/z4_tune_a_abs.jsonl $W/z4_tune_b_abs.jsonl /tmp/v16/z4_tune_c.jsonl; } > /tmp/v16/bench_learn_tune_half_z4.txt 2>&1
echo done
