#!/bin/bash
cd /tmp/v19

P=/work/main/.venv/bin/python
$P refit.py learn_s8a.records.jsonl learn_s8a_v12.json.gz /tmp/v18/z4_tune_e.jsonl /tmp/v18/z4_tune_f.jsonl
$P refit.py learn_bi.records.jsonl learn_bi_v12.json.gz bi_tune_a.jsonl bi_tune_b.jsonl
$P timeadapt.py /work/main/cost_models/data/learned_cpu.json.gz adapt_z4_v20a.records.jsonl adapt_z4_v20a_v12.json.gz /tmp/v18/z4_tune_e.jsonl /tmp/v18/z4_tune_f.jsonl
