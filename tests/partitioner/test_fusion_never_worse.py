"""Fusing never makes the exact plan worse (issue 23): over the shared zoo, the fused pipeline's
optimum is at most the optimum of the model as it is, because a unit holding a fusion region
keeps the region's unfused form as an alternative view."""

from __future__ import annotations

import pytest

from tacopt.partitioner.pipeline import partition
from tests.conftest import bundled_files, zoo_files

MODELS = [*bundled_files(), *zoo_files()]


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_the_fused_optimum_is_never_above_the_plain_one(path):
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(path)
    fused = partition(G, "GPU,CPU", time_limit_s=30.0)
    plain = partition(G, "GPU,CPU", fuse=False, time_limit_s=30.0)
    if "OPTIMAL" != fused.plan.status or "OPTIMAL" != plain.plan.status:
        pytest.skip(f"not proven within 30 s: {fused.plan.status} / {plain.plan.status}")
    assert fused.plan.objective <= plain.plan.objective * (1 + 1e-9), path.name
