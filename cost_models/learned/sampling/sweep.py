"""Training data that covers each op kind's configuration space, not one zoo (nn-Meter's idea).

:func:`sample_ops` draws single-op graphs, built with
:class:`tacopt.fusion.ir.builder.GraphBuilder`, from a generic prior per kind (:data:`SAMPLERS`):
kernel size, stride, dilation, channels in / out, depthwise, resolution, padding, fused activation,
broadcast pattern, axis, and the inference type (half of the samples rebuilt in int8 by
:func:`tacopt.cost_models.learned.measurement.retype.retype_op`). The prior is generic (typical
mobile-CNN / transformer values: channels mostly multiples of 8 up to 1,280, resolutions 1-224),
never read from the shared zoo, so a zoo model is an honest held-out test. Sampling is deterministic
for a seed; :func:`tacopt.cost_models.learned.measurement.measure.measure_graphs` measures them,
skipping configurations already in the records file (resumable). ``tacopt measure --sweep --out
train.jsonl``.

>>> items = sample_ops(3, seed=1, kinds=["CONV_2D"])
>>> [(label.split(":")[0], len(G)) for label, G in items]
[('CONV_2D', 1), ('CONV_2D', 1), ('CONV_2D', 1)]
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.retype import RetypeError, retype_op
from tacopt.cost_models.learned.sampling.samplers import (
    BASE_SAMPLERS,
    CHANNELS,
    SAMPLERS,
    activation,
)
from tacopt.cost_models.learned.sampling.samplers_forms import FORMS_PRIOR
from tacopt.cost_models.learned.sampling.samplers_move import MOVE_PRIOR
from tacopt.cost_models.learned.sampling.samplers_net import (
    NET_PRIOR,
    NET_RNN_PRIOR,
    sample_net_chain,
    sample_net_chain_or_tiny,
)
from tacopt.cost_models.learned.sampling.samplers_tail import TAIL_PRIOR
from tacopt.fusion.ir.builder import GraphBuilder

#: The samplers of the regimes the axes check found no learn drew (issue 47, session 5:
#: ``python -m tacopt.benchmarks check_sampler_axes``; docs/cost-models-design.md): a sweep of
#: them alone (``--prior regimes``) measures those regimes without the rest of each prior.
REGIMES_PRIOR: dict[str, float] = {
    "SOFTMAX": 1.5,
    "LOG_SOFTMAX": 1.0,
    "BATCH_MATMUL": 1.5,
    "CONCATENATION": 1.5,
    "MAX_POOL_2D": 1.0,
    "AVERAGE_POOL_2D": 0.5,
    "REDUCE_MAX": 1.0,
    "SUM": 0.5,
    "STRIDED_SLICE_MOVE": 1.0,
    "TRANSPOSE_LAYOUT_MOVE": 1.0,
    "EXPAND_DIMS_MOVE": 0.3,
    "MUL": 0.8,
    # the fourth held-out set's forms no prior drew (samplers_forms)
    **FORMS_PRIOR,
}

#: Named priors of ``tacopt measure --sweep --prior``: sampler weights (None: the generic
#: samplers, :data:`BASE_SAMPLERS`), the chain models drawn with them, and how many sampled
#: ops per chain model (a network chain of the ``net`` prior costs ~18 op timings).
PRIORS: dict[
    str, tuple[Mapping[str, float] | None, Callable[[int, int], nx.MultiDiGraph], int]
] = {
    "generic": (None, lambda seed, i: sample_chain(seed, i), 50),
    "net": (NET_PRIOR, sample_net_chain, 100),
    "net-rnn": (NET_RNN_PRIOR, sample_net_chain_or_tiny, 50),
    "tail": (TAIL_PRIOR, lambda seed, i: sample_chain(seed, i), 50),
    "move": (MOVE_PRIOR, lambda seed, i: sample_chain(seed, i), 50),
    "regimes": (REGIMES_PRIOR, lambda seed, i: sample_chain(seed, i), 50),
    "forms": (FORMS_PRIOR, lambda seed, i: sample_chain(seed, i), 50),
}


def sample_ops(
    n: int,
    *,
    seed: int = 0,
    kinds: Sequence[str] | None = None,
    weights: Mapping[str, float] | None = None,
    int8_share: float = 0.5,
) -> list[tuple[str, nx.MultiDiGraph]]:
    """``n`` single-op graphs ``(label, G)`` (see :func:`iter_samples`), built."""
    return [
        (label, build())
        for label, build in iter_samples(
            n, seed=seed, kinds=kinds, weights=weights, int8_share=int8_share
        )
    ]


def iter_samples(
    n: int,
    *,
    seed: int = 0,
    kinds: Sequence[str] | None = None,
    weights: Mapping[str, float] | None = None,
    int8_share: float = 0.5,
) -> Iterator[tuple[str, Callable[[], nx.MultiDiGraph]]]:
    """``n`` single-op graphs as ``(label, build)``, drawn from the per-kind priors and
    deterministic for a ``seed``: kinds in proportion to ``weights`` (default :data:`SAMPLERS`'
    weights; ``kinds`` restricts them), ``int8_share`` of them rebuilt in int8 (kept in float
    when the op has no int8 form). Labels are ``KIND:seed:index``; sample ``i`` draws from its
    own generator, so a resumed sweep skips done labels without building them."""
    names = sorted(kinds if kinds is not None else (weights or BASE_SAMPLERS))
    w = np.array([(weights or {}).get(k, SAMPLERS[k][1]) for k in names], dtype=float)
    picks = np.random.default_rng(seed).choice(len(names), size=n, p=w / w.sum())
    for i, j in enumerate(picks):
        kind = names[int(j)]
        yield f"{kind}:{seed}:{i}", partial(_build_sample, kind, seed, i, int8_share)


def _build_sample(kind: str, seed: int, i: int, int8_share: float) -> nx.MultiDiGraph:
    rng = np.random.default_rng([seed, i])
    G = SAMPLERS[kind][0](rng)
    if kind not in ("QUANTIZE", "DEQUANTIZE") and rng.random() < int8_share:
        try:
            G = retype_op(G, "QUANTIZED_INT8", seed=seed)
        except RetypeError:
            pass
    return G


def adaptive_weights(
    records: Sequence[Mapping[str, Any]], *, seed: int, folds: int = 3
) -> dict[str, float]:
    """Sampling weights of the generic samplers (not the ``net`` priors') for a sweep of
    ``seed`` that favour the kinds the fit predicts worst: each kind's prior weight x (its
    share of ops *not* within ±10 % + 0.1), measured by ``folds``-fold cross-validation (folds
    by label) on the records of earlier seeds (labels ``KIND:s:i`` with ``s < seed``), so the
    weights stay the same while a sweep of ``seed`` resumes. Kinds without records keep their
    prior weight.
    """

    def seed_of(r: Mapping[str, Any]) -> int:
        parts = str(r.get("model", "")).split(":")
        return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else -1

    def fold(r: Mapping[str, Any]) -> int:
        return int(hashlib.sha1(str(r.get("model")).encode()).hexdigest()[:8], 16) % folds

    earlier = [r for r in records if r.get("type") == "op" and 0 <= seed_of(r) < seed]
    misses: dict[str, list[float]] = {}
    for k in range(folds):
        train = [r for r in earlier if fold(r) != k]
        held = [r for r in earlier if fold(r) == k]
        if not train or not held:
            continue
        model = LearnedCostModel(fit(train, kinds=False))
        for name, v in model_accuracy(model, held)["per_kind"].items():
            misses.setdefault(name.split("|")[0], []).append((1 - v["within_10pct"]) * v["n"])
    counts: dict[str, int] = {}
    for r in earlier:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    weights = {}
    for kind, (_, prior) in sorted(SAMPLERS.items()):
        if kind in NET_RNN_PRIOR or kind in TAIL_PRIOR or kind in MOVE_PRIOR:
            continue  # the generic samplers only: the other priors have their phases
        if kind in misses and counts.get(kind):
            weights[kind] = round(prior * (sum(misses[kind]) / counts[kind] + 0.1), 4)
        else:
            weights[kind] = prior
    return weights


def sample_chain(seed: int, i: int) -> nx.MultiDiGraph:
    """A small float model (3-8 ops in a row, residual ADDs; NHWC) drawn like the single ops: its
    whole-model latency against the sum of its ops' fits how ops add up inside a model
    (``in_model_scale``), with no zoo model involved.

    >>> G = sample_chain(0, 1)
    >>> 3 <= len(G) <= 9
    True
    """
    rng = np.random.default_rng([seed, i, 7])
    h, c = int(rng.choice([7, 14, 19, 28, 38, 56])), int(rng.choice(CHANNELS[:20]))
    b = GraphBuilder(f"chain_{seed}_{i}")
    x = b.input("x", (1, h, h, c))
    seen = {(1, h, h, c): x}
    for _ in range(int(rng.integers(3, 9))):
        step = str(rng.choice(["conv1", "conv3", "dw", "act", "mul", "add"]))
        if step in ("conv1", "conv3"):
            k, cout = (1 if step == "conv1" else 3), int(rng.choice(CHANNELS[:20]))
            w = rng.normal(0, 0.1, (cout, k, k, c))
            x = b.op("CONV_2D", x, w, np.zeros(cout), fused_activation_function=activation(rng))
            c = cout
        elif step == "dw":
            x = b.op("DEPTHWISE_CONV_2D", x, rng.normal(0, 0.1, (1, 3, 3, c)), np.zeros(c))
        elif step == "act":
            x = b.op(str(rng.choice(["RELU", "HARD_SWISH", "LOGISTIC"])), x)
        elif step == "mul":
            x = b.op("MUL", x, rng.uniform(0.5, 1.5, c).astype(np.float32))
        elif (1, h, h, c) in seen and seen[(1, h, h, c)] != x:
            x = b.op("ADD", x, seen[(1, h, h, c)])
        seen[(1, h, h, c)] = x
    return b.build(outputs=[x])
