"""Every cost model against every device record: what a record allows, each model prices.

A device's capability lives on its record (:mod:`tacopt.partitioner.targets`) and nowhere else;
cost models only price, and say "cannot price" explicitly. This holds the two together on every
op of the bundled models, before and after fusion, in every inference type a record allows.
"""

from __future__ import annotations

import json

import pytest

from tacopt.cost_models.base import get_cost_model
from tacopt.cost_models.roofline import PROFILE_DIR
from tacopt.fusion.fuse import fuse
from tacopt.fusion.ir.vocabulary import INFERENCE_TYPES
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.partitioner.targets import CPU, GPU, NNAPI, NPU, pricing_device

RECORDS = (CPU, GPU, NNAPI, NPU)


@pytest.fixture(scope="module")
def graphs(bundled_models):
    out = {}
    for name, path in sorted(bundled_models.items()):
        G = read_tflite(path)
        out[name] = G
        out[name + " (fused)"] = fuse(G).graph
    return out


@pytest.mark.parametrize("spec", ["tac", "roofline"])
def test_every_model_prices_what_every_record_allows(graphs, spec: str) -> None:
    model = get_cost_model(spec)
    allowed = unpriced = 0
    missing: list[str] = []
    for name, G in graphs.items():
        for node in G.nodes:
            for target in RECORDS:
                device, _ = pricing_device(target, model)
                for itype in INFERENCE_TYPES:
                    if not target.supports(G, node, itype):
                        continue
                    allowed += 1
                    if model.op_cost(G, node, device, itype) is None:
                        unpriced += 1
                        kind = G.nodes[node]["op"].kind
                        missing.append(f"{name}: {kind} on {target.name}/{itype}")
    assert allowed > 1000
    assert unpriced == 0, sorted(set(missing))[:10]


def test_profiles_hold_no_capability() -> None:
    for path in sorted(PROFILE_DIR.glob("*.json")):
        doc = json.loads(path.read_text())
        assert not {"supported_ops", "unsupported_ops", "inference_types"} & doc.keys(), path.name
