"""Target annotation: each op gets a device and an inference type (proposes data only).

An op goes to the first device in the user's order that supports it, else the CPU (which runs
everything). Its inference type follows its operand types, as TAC's ``GetInferenceType``
(:func:`tacopt.cost_models.ops.inference_type`; its rare UNKNOWN, int8 mixed with uint8, counts as
FLOAT here). Pins (``pattern=DEVICE``) force ops whose name, or one of
whose output tensors, matches an ``fnmatch`` glob onto a device.

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> from tacopt.partitioner.targets import resolve_devices
>>> G = make_graph("g", [Tensor("x", (1, 4), "float32"), Tensor("y", (1, 4), "float32")],
...                [Op("sub_0", "SUB", ("x", "x"), ("y",))], ["x"], ["y"])
>>> annotate_targets(G, resolve_devices("GPU,CPU"))["sub_0"]
Annotation(device='CPU', inference_type='FLOAT', pinned=False)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx

from tacopt.cost_models.ops import inference_type as tac_inference_type
from tacopt.fusion.ir import Op, ops_of
from tacopt.partitioner.targets import PartitionError, Target, get_target


@dataclass(frozen=True, slots=True)
class Annotation:
    """Where an op runs first (TAC's initial placement) and in which inference type."""

    device: str
    inference_type: str
    pinned: bool = False


def inference_type(G: nx.MultiDiGraph, node: str) -> str:
    """TAC's inference type of op ``node``, with UNKNOWN mapped to FLOAT."""
    itype = tac_inference_type(G, node)
    return "FLOAT" if itype == "UNKNOWN" else itype


def parse_pin(text: str) -> tuple[str, str]:
    """``"conv*=GPU"`` -> ``("conv*", "GPU")``; :class:`PartitionError` if malformed.

    >>> parse_pin("add_*=gpu")
    ('add_*', 'GPU')
    """
    pattern, sep, device = text.rpartition("=")
    if not sep or not pattern or not device.strip():
        raise PartitionError(f"pin '{text}' must look like PATTERN=DEVICE, e.g. 'conv_2d_*=GPU'")
    return pattern, device.strip().upper()


def annotate_targets(
    G: nx.MultiDiGraph,
    targets: Sequence[Target],
    *,
    pins: Sequence[tuple[str, str]] = (),
) -> dict[str, Annotation]:
    """Give every op of ``G`` a device and an inference type.

    Parameters
    ----------
    G : nx.MultiDiGraph
        The model graph (nested graphs are not annotated: their calling op carries them).
    targets : sequence of Target
        The devices in the user's order of preference; must include the CPU.
    pins : sequence of (pattern, device)
        Globs over op names and output tensor names; the first matching pin wins, so put
        specific pins before general ones.

    Returns
    -------
    dict
        op name -> :class:`Annotation`, in execution order.

    Raises
    ------
    PartitionError
        When a pin names a device not in ``targets``, matches no op, only matches ops an earlier
        pin took, or pins an op to a device that cannot run it.
    """
    by_name = {t.name: t for t in targets}
    if "CPU" not in by_name:
        raise PartitionError("the device list must include CPU, the fallback for every op")
    pins = [(pattern, get_target(device).name) for pattern, device in pins]  # case-insensitive
    for pattern, device in pins:
        if device not in by_name:
            raise PartitionError(
                f"pin '{pattern}={device}': device {device} is not in the device list "
                f"{','.join(by_name)}"
            )
    used = [False] * len(pins)
    matched = [False] * len(pins)
    out: dict[str, Annotation] = {}
    for name, op in ops_of(G):
        itype = inference_type(G, name)
        hits = _matching_pins(name, op, pins)
        for i in hits:
            matched[i] = True
        if hits:
            pin = hits[0]
            used[pin] = True
            device = pins[pin][1]
            if not by_name[device].supports(G, name, itype):
                raise PartitionError(
                    f"op '{name}' ({op.kind}, {itype}) is pinned to {device}, which cannot run it"
                )
            out[name] = Annotation(device, itype, pinned=True)
            continue
        # an op no device runs as it is (a fused kind LiteRT lacks) starts on the CPU, whose
        # view lowers it back to primitive ops
        device = next((t.name for t in targets if t.supports(G, name, itype)), "CPU")
        out[name] = Annotation(device, itype)
    for i, (pattern, device) in enumerate(pins):
        if not matched[i]:
            raise PartitionError(f"pin '{pattern}={device}' matches no op or output tensor")
        if not used[i]:
            raise PartitionError(
                f"pin '{pattern}={device}': every op it matches is taken by an earlier pin "
                "(the first matching pin wins; put specific pins first)"
            )
    return out


def _matching_pins(name: str, op: Op, pins: Sequence[tuple[str, str]]) -> list[int]:
    return [
        i
        for i, (pattern, _) in enumerate(pins)
        if fnmatch.fnmatchcase(name, pattern)
        or any(fnmatch.fnmatchcase(t, pattern) for t in op.outputs)
    ]
