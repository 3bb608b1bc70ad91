#!/bin/bash
# re-adapt recorded builtin runs with the working tree's code; tuning half only
cd /tmp/v19
for r in adapt_bi_m3 adapt_bi_v20a adapt_bi_v20b; do
  /work/main/.venv/bin/python timeadapt.py base_z4i.json.gz $r.records.jsonl ${r}_v12.json.gz bi_tune_a.jsonl bi_tune_b.jsonl
done
