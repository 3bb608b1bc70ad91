"""What ``tacopt companion`` runs once its options are parsed (:mod:`.companion` holds the
parser)."""

from __future__ import annotations

import argparse

from tacopt.cost_models.cli.measure_run import check_records_file, read_learned_doc
from tacopt.cost_models.learned.fitting.companion import fit_companion, kernel_set
from tacopt.cost_models.learned.fitting.schema import check_model_doc
from tacopt.cost_models.learned.measurement.records import MeasureError, read_records
from tacopt.cost_models.model_file import model_bytes
from tacopt.formats import json_file_kind
from tacopt.io import all_or_nothing


def companion_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt companion`` (:func:`tacopt.cost_models.cli.companion.run`)."""
    with all_or_nothing(
        [("-o", args.out)],
        inputs=[args.model, args.base_records, args.other_records],
        writes={"-o": json_file_kind(args.out)},
    ) as out:
        doc = read_learned_doc(args.model, anchored=True)
        for path, what in ((args.base_records, "base records"),
                           (args.other_records, "other records")):  # fmt: skip
            check_records_file(path, what=what)
        base, other = read_records(args.base_records), read_records(args.other_records)
        own = kernel_set(doc.get("fingerprint"))
        fingerprints = [r.get("fingerprint") for r in base if r.get("type") == "device"]
        if fingerprints and kernel_set(fingerprints[0]) != own:
            raise MeasureError(
                f"companion: '{args.base_records}' was measured on kernel set "
                f"{kernel_set(fingerprints[0])}, the model '{args.model}' on {own}"
            )
        try:
            comp = fit_companion(base, other)
        except ValueError as exc:
            raise MeasureError(f"companion: {exc}") from None
        name = f"{comp['resolver']}/{comp['threads']}"
        doc = {**doc, "companions": {**(doc.get("companions") or {}), name: comp}}
        check_model_doc(doc, str(args.out))
        out.write(args.out, model_bytes(doc, args.out))
    print(
        f"wrote {args.out}: companion {name} against {own}, fitted on {comp['pairs']} "
        f"configurations measured on both, {len(comp['trees'])} kernel families with trees"
    )
    return 0
