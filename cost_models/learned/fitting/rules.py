"""A learned model's price of a custom op by its registered rule
(:mod:`~tacopt.cost_models.learned.measurement.custom_ops`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tacopt.cost_models.learned.fitting.features import as_kernel_kind
from tacopt.cost_models.learned.measurement.custom_ops import custom_rule, stand_in
from tacopt.cost_models.learned.measurement.singleop import op_features, op_key


def fitted_kind(model: Any, features: Mapping[str, Any]) -> bool:
    """Whether ``model``'s fits hold the op's kind itself (its records were in the fit)."""
    kind = features["kind"]
    return any(n in model.fits for n in (f"{kind}|{features.get('inference_type')}", kind))


def rule_latency(model: Any, features: Mapping[str, Any]) -> tuple[float, str] | None:
    """``(latency_us, source)`` of a custom op priced by its rule: the user's measured latency,
    or the stand-in's ops priced by ``model`` (a :class:`~.model.LearnedCostModel`: one invoke
    overhead, their net latencies added); None when no rule covers it. The source names the
    rule (``"rule <description>"``)."""
    rule = custom_rule(str(features["kind"]))
    if rule is None:
        return None
    if rule.table is not None:
        found = rule.table.lookup(str(features.get("key") or op_key(features)))
        return None if found is None else (found, f"rule {rule.description}")
    made = stand_in(features)
    if made is None:
        return None
    description, S = made
    net = 0.0
    for n in S:
        f: Mapping[str, Any] = op_features(S, n, root=S)
        if model.kernel_kinds:
            f = as_kernel_kind(f, **model.kernel_kind_flags)
        p = model._predict_fitted(f)
        net += max(p.latency_us - model.base_overhead_us, model.floor_us)
    return model.base_overhead_us + net, f"rule {description}"
