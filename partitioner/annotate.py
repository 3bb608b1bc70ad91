"""Target annotation: each op gets a device and an inference type (proposes data only).

An op goes to the first device in the user's order that supports it, else the CPU (which runs
everything). Its inference type follows its operand types, as TAC's ``GetInferenceType``
(:func:`tacopt.cost_models.ops.inference_type`; its rare UNKNOWN, int8 mixed with uint8, counts as
FLOAT here). Pins (``pattern=DEVICE``) force ops whose name, or one of
whose output tensors, matches an ``fnmatch`` glob onto a device; ``kind:GLOB=DEVICE`` (e.g.
``kind:CONV_2D=GPU``) matches op kinds instead. Pins are matched against the graph being
partitioned: the fused model, unless fusion is turned off.

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

import networkx as nx

from tacopt.cost_models.ops import inference_type as tac_inference_type
from tacopt.fusion.ir import Op, ops_of
from tacopt.partitioner.refusals import runnable_refusal
from tacopt.partitioner.subgraphs import Annotation
from tacopt.partitioner.targets import PartitionError, Target, get_target

#: A pin pattern starting with this matches op kinds (``kind:CONV_2D=GPU``).
KIND_PREFIX = "kind:"


def annotated_inference_type(G: nx.MultiDiGraph, node: str) -> str:
    """The inference type op ``node`` is annotated with: TAC's
    (:func:`tacopt.cost_models.ops.inference_type`), with UNKNOWN mapped to FLOAT."""
    itype = tac_inference_type(G, node)
    return "FLOAT" if itype == "UNKNOWN" else itype


def parse_pin(text: str) -> tuple[str, str]:
    """``"conv*=GPU"`` -> ``("conv*", "GPU")``; :class:`PartitionError` if malformed.

    >>> parse_pin("add_*=gpu"), parse_pin("kind:conv_2d=GPU")
    (('add_*', 'GPU'), ('kind:CONV_2D', 'GPU'))
    """
    pattern, sep, device = text.rpartition("=")
    if not sep or not pattern or not device.strip():
        raise PartitionError(
            f"pin '{text}' must look like PATTERN=DEVICE, e.g. 'conv_2d_*=GPU' or "
            "'kind:CONV_2D=GPU'"
        )
    if pattern.startswith(KIND_PREFIX):
        kind = pattern[len(KIND_PREFIX) :]
        if not kind:
            raise PartitionError(f"pin '{text}' names no op kind after '{KIND_PREFIX}'")
        pattern = KIND_PREFIX + kind.upper()
    return pattern, device.strip().upper()


def normalize_pins(pins: Sequence[tuple[str, str] | str]) -> tuple[tuple[str, str], ...]:
    """Pins as ``(pattern, DEVICE)`` pairs; a string item is parsed by :func:`parse_pin`.

    >>> normalize_pins(["kind:conv_2d=gpu", ("fc_*", "cpu")])
    (('kind:CONV_2D', 'GPU'), ('fc_*', 'CPU'))
    """
    out = []
    for pin in pins:
        if isinstance(pin, str):
            out.append(parse_pin(pin))
        else:
            pattern, device = pin
            out.append(parse_pin(f"{pattern}={device}"))
    return tuple(out)


def pinned_ops(G: nx.MultiDiGraph, pins: Sequence[tuple[str, str]]) -> dict[str, int]:
    """op name -> the index of the first pin in ``pins`` that matches it (unpinned ops absent).

    A pin matches an op by its name or an output tensor's name (an ``fnmatch`` glob), or, as
    ``kind:GLOB``, by its kind.

    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor(n, (1, 4), "float32") for n in "xyz"],
    ...     [Op("a", "RELU", ("x",), ("y",)), Op("b", "TANH", ("y",), ("z",))], ["x"], ["z"])
    >>> pinned_ops(G, [("kind:TANH", "GPU"), ("*", "CPU")])
    {'a': 1, 'b': 0}
    """
    out: dict[str, int] = {}
    for name, op in ops_of(G):
        hits = _matching_pins(name, op, pins)
        if hits:
            out[name] = hits[0]
    return out


def annotate_targets(
    G: nx.MultiDiGraph,
    targets: Sequence[Target],
    *,
    pins: Sequence[tuple[str, str] | str] = (),
) -> dict[str, Annotation]:
    """Give every op of ``G`` a device and an inference type.

    Parameters
    ----------
    G : nx.MultiDiGraph
        The model graph (nested graphs are not annotated: their calling op carries them).
    targets : sequence of Target
        The devices in the user's order of preference; must include the CPU.
    pins : sequence of (pattern, device) or "PATTERN=DEVICE"
        Globs over op names and output tensor names, or ``kind:GLOB`` over op kinds; the first
        matching pin wins, so put specific pins before general ones.

    Returns
    -------
    dict
        op name -> :class:`Annotation`, in execution order.

    Raises
    ------
    PartitionError
        When a pin names a device not in ``targets``, matches no op, only matches ops an earlier
        pin took, or pins an op to a device that cannot run it, even after lowering (the
        message names the op and why, as :func:`tacopt.partitioner.refusals.refusal` does).
    """
    by_name = {t.name: t for t in targets}
    if "CPU" not in by_name:
        raise PartitionError("the device list must include CPU, the fallback for every op")
    checked = [(pattern, get_target(device).name) for pattern, device in normalize_pins(pins)]
    for pattern, device in checked:
        if device not in by_name:
            raise PartitionError(
                f"pin '{pattern}={device}': device {device} is not in the device list "
                f"{','.join(by_name)}"
            )
    used = [False] * len(checked)
    matched = [False] * len(checked)
    out: dict[str, Annotation] = {}
    for name, op in ops_of(G):
        itype = annotated_inference_type(G, name)
        hits = _matching_pins(name, op, checked)
        for i in hits:
            matched[i] = True
        if hits:
            pin = hits[0]
            used[pin] = True
            device = checked[pin][1]
            why = runnable_refusal(G, name, by_name[device], itype, float_form=True)
            if why is not None:
                pattern = checked[pin][0]
                raise PartitionError(
                    f"pin '{pattern}={device}': op '{name}' ({op.kind}, {itype}) cannot run on "
                    f"{device}: {why.detail}"
                )
            out[name] = Annotation(device, itype, pinned=True)
            continue
        # an op no device runs as it is (a fused kind LiteRT lacks) starts on the CPU, whose
        # view lowers it back to primitive ops
        device = next((t.name for t in targets if t.supports(G, name, itype)), "CPU")
        out[name] = Annotation(device, itype)
    for i, (pattern, device) in enumerate(checked):
        if not matched[i]:
            raise PartitionError(f"pin '{pattern}={device}' matches no op or output tensor")
        if not used[i]:
            raise PartitionError(
                f"pin '{pattern}={device}': every op it matches is taken by an earlier pin "
                "(the first matching pin wins; put specific pins first)"
            )
    return out


def _matching_pins(name: str, op: Op, pins: Sequence[tuple[str, str]]) -> list[int]:
    return [i for i, (pattern, _) in enumerate(pins) if _matches(name, op, pattern)]


def _matches(name: str, op: Op, pattern: str) -> bool:
    if pattern.startswith(KIND_PREFIX):
        return fnmatch.fnmatchcase(op.kind.upper(), pattern[len(KIND_PREFIX) :].upper())
    return fnmatch.fnmatchcase(name, pattern) or any(
        fnmatch.fnmatchcase(t, pattern) for t in op.outputs
    )
