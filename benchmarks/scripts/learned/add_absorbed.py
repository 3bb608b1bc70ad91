"""Records measured before model records listed ``absorbed`` ops: add the list, from the models.

    python -m tacopt.benchmarks add_absorbed RECORDS.jsonl --zoo DIR --out NEW.jsonl

Which ops XNNPACK absorbs into their consumer inside a model (a zero PAD before a VALID
convolution: :func:`tacopt.cost_models.learned.measurement.singleop.absorbed_reason`) is a
property of the model's graph, not a measurement, so the list can be added to records measured
before ``measure`` wrote it: each model record without ``absorbed`` gets the absorbed ops of
``DIR/<model>.tflite``'s priced graph that its ``ops`` list (records of other kernels than
XNNPACK's get an empty list). Every other record is copied as it is; ``--out`` is written
whole or not at all.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from tacopt.cost_models.learned.measurement.records import read_records, write_record
from tacopt.cost_models.learned.measurement.singleop import absorbed_ops, priced_graph
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.io import atomic_write


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", type=Path)
    ap.add_argument("--zoo", type=Path, required=True, help="folder of the models' .tflite files")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)

    records = read_records(args.records)
    added = 0
    for r in records:
        if r.get("type") != "model" or "absorbed" in r:
            continue
        if r.get("resolver", "xnnpack") != "xnnpack":
            r["absorbed"] = []
            continue
        path = args.zoo / f"{r['model']}.tflite"
        if not path.is_file():
            print(f"add_absorbed: {path}: no such model (for the record of '{r['model']}')")
            return 2
        listed = {k for k, _ in r["ops"]}
        found = absorbed_ops(priced_graph(read_tflite(path))[0])
        r["absorbed"] = sorted([k, n] for k, n in found.items() if k in listed)
        added += sum(n for _, n in r["absorbed"])
    text = io.StringIO()
    for r in records:
        write_record(text, r)
    atomic_write(args.out, text.getvalue())
    print(f"{args.out}: {added:g} absorbed ops listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
