# usage: ba20.sh COMMIT  -> /tmp/v19/ba_COMMIT.txt (the recorded 16-sample runs, tuning halves)
cd /tmp
V=/work/main/.venv/bin/python
S=/work/main/cost_models/data/learned_cpu.json.gz
B=/tmp/v19/base_z4i.json.gz
Z="/tmp/v18/z4_tune_e.jsonl /tmp/v18/z4_tune_f.jsonl"
T2="/tmp/v19/t2_tune_a.jsonl /tmp/v19/t2_tune_b.jsonl"
BI="/tmp/v19/bi_tune_a.jsonl /tmp/v19/bi_tune_b.jsonl"
{
for r in a b c; do $V /tmp/v19/ba20.py $B /tmp/v19/adapt_bi_$r.records.jsonl $BI; done
for r in a b c; do $V /tmp/v19/ba20.py $B /tmp/v19/adapt_t2_$r.records.jsonl $T2; done
$V /tmp/v19/ba20.py $S /tmp/w18/adapt_z4d.records.jsonl $Z
$V /tmp/v19/ba20.py $S /tmp/w18/adapt_z4e.records.jsonl $Z
$V /tmp/v19/ba20.py $S /tmp/v18/adapt_z4f.records.jsonl $Z
$V /tmp/v19/ba20.py $S /tmp/w18/adapt_builtin.records.jsonl /tmp/w18/tune_builtin_abs.jsonl
$V /tmp/v19/ba20.py $S /tmp/w18/adapt_xnn2.records.jsonl /tmp/w18/tune_xnn2_abs.jsonl
} 2>&1 | grep -v Warn > /tmp/v19/ba_$1.txt
