"""``tacopt evaluate`` and ``tacopt inspect-model``: any learned model file, on any records, and
the device it was fitted on."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command
from tacopt.cost_models.cli import check_records_file, read_learned_doc
from tacopt.errors import printable


def register_evaluate(subparsers: Any) -> None:
    p = add_command(subparsers, "evaluate", run_evaluate)
    p.add_argument("model", help="a learned model file (.json / .json.gz), or 'learned'")
    p.add_argument("records", type=Path, help="records from `tacopt measure` (JSON lines)")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")


def run_evaluate(args: argparse.Namespace) -> int:
    """How well a learned model predicts measured records (any model, any records).

    Evaluate a learned model file (or 'learned', the shipped one) on records from `tacopt
    measure`: share of ops within ±10 %, MAPE, Spearman, median whole-model error, skip share,
    and the device fingerprints of the model and of the records. Records are first put in the
    model's units by the speed measured beside them. The figures are those of `tacopt fit
    --eval` (one implementation: cost_models/learned/fitting/accuracy.py).
    """
    from tacopt.cost_models.learned.fitting.accuracy import model_accuracy, report_lines
    from tacopt.cost_models.learned.measurement.fingerprint import records_fingerprint
    from tacopt.cost_models.learned.measurement.records import read_records

    model = load_learned(args.model)
    check_records_file(args.records, what="records file")
    records = read_records(args.records)
    result = model_accuracy(model, records, train_keys=set(model.table))
    result["fingerprints"] = {
        "model": model.doc.get("fingerprint"),
        "records": records_fingerprint(records),
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print("\n".join(printable(line) for line in report_lines(result)))  # names from files
    return 0


def load_learned(spec: str) -> Any:
    """The learned model of a file, or the shipped one for ``"learned"``.

    Raises
    ------
    CostModelError
        A missing or unreadable file, or one that is not a learned model (one line).
    """
    from tacopt.cost_models.learned.fitting.model import LearnedCostModel, default_learned_model

    if spec == "learned":
        return default_learned_model()
    return LearnedCostModel(read_learned_doc(spec), source=spec)


def register_inspect_model(subparsers: Any) -> None:
    p = add_command(subparsers, "inspect-model", run_inspect_model)
    p.add_argument("model", help="a learned model file (.json / .json.gz), or 'learned'")
    p.add_argument("--json", action="store_true", help="print it as JSON")


#: The fields of a learned model file that add its ops up to a whole model
#: (:func:`tacopt.cost_models.learned.fitting.whole_model.whole_model_terms`).
WHOLE_MODEL_TERMS = (
    "in_model_scale",
    "in_model_spill",
    "cache_bytes",
    "per_op_us",
    "while_trip_us",
)


def run_inspect_model(args: argparse.Namespace) -> int:
    """What a learned model file is: its device fingerprint, training data, calibration.

    Print a learned model file's device fingerprint (CPU, ISA extensions, cores, LiteRT version,
    op resolver / delegate, threads), what it was trained on, its calibration, how it adds its
    ops up to a whole model (the in-model scale and spill, the training device's L2 and L3
    sizes, the cost per op and per loop trip), what it was
    adapted from (``tacopt learn --from``), and whether this machine is the device it was fitted
    on.
    """
    from tacopt.cost_models.learned.measurement.fingerprint import (
        describe,
        device_differences,
        host_fingerprint,
    )

    model = load_learned(args.model)
    doc = model.doc
    fp = doc.get("fingerprint")
    host = host_fingerprint()
    diff = device_differences(fp, host, hardware_only=True) if fp else None
    info = {
        "model": args.model,
        "format": doc.get("format"),
        "version": doc.get("version"),
        "device": doc.get("device", "CPU"),
        "fingerprint": fp,
        "trained_on": doc.get("trained_on"),
        "calibrated": doc.get("calibrated"),
        "whole_model": {k: doc.get(k) for k in WHOLE_MODEL_TERMS},
        "this_machine": host,
        "differences": diff,
    }
    adapted = doc.get("adapted")
    if adapted:  # tacopt learn --from: the base it was adapted from, and how
        info["adapted"] = {
            "ops": adapted.get("ops"),
            "base_fingerprint": adapted.get("base_fingerprint"),
            "own_families": adapted.get("own_families", []),
            "own_weights": adapted.get("own_weights")
            or dict.fromkeys(adapted.get("own_families", []), 1.0),
        }
    if args.json:
        print(json.dumps(info, sort_keys=True))
        return 0
    lines: list[str] = []  # every line goes through printable: strings from the file
    lines.append(f"{args.model}: {doc.get('format')} version {doc.get('version')}")
    lines.append(f"fitted on: {describe(fp)}")
    for k, v in sorted((fp or {}).items()):
        lines.append(f"  {k}: {json.dumps(v)}")
    if doc.get("trained_on"):
        lines.append(f"trained on: {json.dumps(doc['trained_on'], sort_keys=True)}")
    if doc.get("calibrated"):
        lines.append(f"calibrated: {json.dumps(doc['calibrated'], sort_keys=True)}")
    terms = ", ".join(f"{k} {json.dumps(v)}" for k, v in info["whole_model"].items())
    lines.append(f"whole models: {terms}")
    if adapted:
        a = info["adapted"]
        own = ", ".join(f"{f} (weight {w:g})" for f, w in sorted(a["own_weights"].items()))
        own = own or "none"
        lines.append(f"adapted on {a['ops']} ops from: {describe(a['base_fingerprint'])}")
        lines.append(f"  kernel families priced by a model of this device's own: {own}")
    lines.append(f"this machine: {describe(host)}")
    if diff is None:
        lines.append("same device: unknown (the model records no fingerprint)")
    else:
        lines.append("same device: " + ("yes" if not diff else "no (" + "; ".join(diff) + ")"))
    print("\n".join(printable(line) for line in lines))
    return 0
