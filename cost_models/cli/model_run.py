"""What ``tacopt evaluate`` and ``tacopt inspect-model`` run once their options are parsed
(:mod:`.model` holds the parsers, imported by every ``tacopt --help``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tacopt.cost_models.cli.measure_run import check_records_file, read_learned_doc
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy, report_lines
from tacopt.cost_models.learned.fitting.model import LearnedCostModel, default_learned_model
from tacopt.cost_models.learned.measurement.fingerprint import (
    describe,
    device_differences,
    host_fingerprint,
    records_fingerprint,
)
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.errors import printable


def evaluate_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt evaluate`` (:func:`tacopt.cost_models.cli.model.run_evaluate`)."""
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
    if spec == "learned":
        return default_learned_model()
    return LearnedCostModel(read_learned_doc(spec), source=spec)


#: The fields of a learned model file that add its ops up to a whole model
#: (:func:`tacopt.cost_models.learned.fitting.whole_model.whole_model_terms`).
WHOLE_MODEL_TERMS = (
    "in_model_scale",
    "in_model_spill",
    "cache_bytes",
    "per_op_us",
    "while_trip_us",
    "cold_weight_us_per_mb",
)


def inspect_model_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt inspect-model`` (:func:`.model.run_inspect_model`)."""
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
        # kernel-set companions (tacopt companion): the other kernel sets it carries
        "companions": {
            name: {"pairs": c.get("pairs"), "fingerprint": c.get("fingerprint")}
            for name, c in sorted((doc.get("companions") or {}).items())
        },
    }
    adapted = doc.get("adapted")
    if adapted:  # tacopt learn --from: the base it was adapted from, and how
        info["adapted"] = {
            "ops": adapted.get("ops"),
            "base_fingerprint": adapted.get("base_fingerprint"),
            "own_families": adapted.get("own_families", []),
            "own_weights": adapted.get("own_weights")
            or dict.fromkeys(adapted.get("own_families", []), 1.0),
            "companion": adapted.get("companion"),
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
        if a["companion"]:
            lines.append(f"  started from the base x its companion for {a['companion']}")
    for name, c in info["companions"].items():
        lines.append(f"companion for {name}: {c['pairs']} configurations measured on both, on "
                     f"{describe(c['fingerprint'])}")  # fmt: skip
    lines.append(f"this machine: {describe(host)}")
    if diff is None:
        lines.append("same device: unknown (the model records no fingerprint)")
    else:
        lines.append("same device: " + ("yes" if not diff else "no (" + "; ".join(diff) + ")"))
    print("\n".join(printable(line) for line in lines))
    return 0
