"""Hardware targets: which ops a device runs, in which inference types, and at what price.

A target is a device's one record: what it runs (op kinds, fused kinds, inference types and
constraints), how it is priced (its own name in the cost model, else an alias such as "priced
like NNAPI, twice as fast"), its link and its lowerings. Cost models only price; they never decide
what a device runs. Two extension points, as in TAC:

- :class:`SimpleTarget` (TAC's ``SimpleHardware``): a deny-list of op kinds plus an advantage
  factor over the CPU; an op costs its CPU cost divided by the factor.
- the :class:`Target` protocol (TAC's ``TargetHardware``): a support predicate, a pricing
  rule, a switching cost and device-specific lowerings. :class:`TableTarget` implements it from a
  support **table** (op kind -> inference types + an optional predicate), which is how the
  built-ins are declared: one table per device, no per-backend support functions.

Built-ins: ``CPU`` (runs everything, the fallback), ``GPU`` (float only; the op set of TAC's
``gpu_hardware.cc``), ``NNAPI`` (float, int8, uint8; the NNAPI delegate's common ops, without
MEAN, which TAC lowers to AVERAGE_POOL_2D for NNAPI) and ``NPU`` (an int8-only DSP example that
lacks FULLY_CONNECTED and MEAN). Device names are case-insensitive; :func:`resolve_devices`
always appends ``CPU``, and ``CPU`` runs every op, so every op has a device.

Examples
--------
>>> [t.name for t in resolve_devices("gpu,nnapi")]
['GPU', 'NNAPI', 'CPU']
>>> get_target("tpu")
Traceback (most recent call last):
...
tacopt.partitioner.targets.TargetError: unknown device 'TPU'; known: CPU, GPU, NNAPI, NPU
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tacopt.cost_models.base import CostModel
from tacopt.cost_models.tac import GPU_OPS
from tacopt.errors import TacoptError
from tacopt.fusion.ir import FLOAT_DTYPES, Op
from tacopt.fusion.ir.vocabulary import FUSION_ONLY_KINDS, INFERENCE_TYPES
from tacopt.registry import Registry

if TYPE_CHECKING:
    import networkx as nx

    from tacopt.partitioner.lowerings import Lowering

FLOAT = frozenset({"FLOAT"})
QUANTIZED = frozenset({"QUANTIZED_INT8", "QUANTIZED_UINT8"})
ALL_TYPES = frozenset(INFERENCE_TYPES)

#: The activation dtypes an op of each inference type reads and writes.
_TYPE_DTYPES: dict[str, frozenset[str]] = {
    "FLOAT": FLOAT_DTYPES,
    "HYBRID": FLOAT_DTYPES,
    "QUANTIZED_INT8": frozenset({"int8"}),
    "QUANTIZED_UINT8": frozenset({"uint8"}),
}
#: Integer activations (indices, shapes) an accelerator op may read besides its data type.
_INDEX_DTYPES = frozenset({"int32", "int64"})


class TargetError(TacoptError):
    """An unknown or duplicate device, or a target that cannot be used."""


class PartitionError(TacoptError):
    """A partition, pin or plan that does not fit the graph it is applied to."""


Predicate = Callable[["nx.MultiDiGraph", Op], bool]


@runtime_checkable
class Target(Protocol):
    """A device the partitioner can place ops on (TAC's ``TargetHardware``).

    ``supports`` says whether op ``node`` of ``G`` runs here as ``inference_type``; ``pricing``
    lists the ``(device, speedup)`` pairs it is priced as, in order: the first device the cost
    model knows prices its ops, divided by the speedup (:func:`pricing_device`);
    ``switching_cost`` is the link into this device from ``src_device`` (``None``: ask the cost
    model); ``lowerings`` are rewrites tried, before the built-in table of
    :mod:`tacopt.partitioner.lowerings`, on ops this device does not support.
    """

    @property
    def name(self) -> str: ...

    @property
    def lowerings(self) -> tuple[Lowering, ...]: ...

    def supports(self, G: nx.MultiDiGraph, node: str, inference_type: str) -> bool: ...

    @property
    def pricing(self) -> tuple[tuple[str, float], ...]: ...

    def switching_cost(self, src_device: str) -> tuple[float, float] | None: ...


# --------------------------------------------------------------------------------------------
# predicates used in support tables (small, composable)
# --------------------------------------------------------------------------------------------


def activations_match(G: nx.MultiDiGraph, op: Op, inference_type: str) -> bool:
    """Whether ``op``'s activations are in ``inference_type``'s dtype (index tensors allowed)."""
    tensors = G.graph["tensors"]
    want = _TYPE_DTYPES[inference_type]
    for t in op.outputs:
        if tensors[t].dtype not in want:
            return False
    for name in op.inputs:
        if name is None or tensors[name].is_constant:
            continue
        if tensors[name].dtype not in want and tensors[name].dtype not in _INDEX_DTYPES:
            return False
    return True


def _mismatch(G: nx.MultiDiGraph, op: Op, inference_type: str) -> str:
    """Which activation of ``op`` is not in ``inference_type``'s dtypes (activations_match)."""
    tensors = G.graph["tensors"]
    want = _TYPE_DTYPES[inference_type]
    for name in (*op.outputs, *(i for i in op.inputs if i is not None)):
        t = tensors[name]
        if t.is_constant or t.dtype in want or (name in op.inputs and t.dtype in _INDEX_DTYPES):
            continue
        return f"activation '{name}' is {t.dtype}, not {inference_type}"
    return f"its activations are not {inference_type}"


def rank_is(rank: int) -> Predicate:
    """Predicate: the op's first output has exactly ``rank`` dimensions."""

    def check(G: nx.MultiDiGraph, op: Op) -> bool:
        return len(G.graph["tensors"][op.outputs[0]].shape) == rank

    check.__doc__ = f"its output has {rank} dimensions"
    return check


def all_of(*predicates: Predicate) -> Predicate:
    """Predicate: every one of ``predicates`` holds (torch.fx's ``chain``)."""

    def check(G: nx.MultiDiGraph, op: Op) -> bool:
        return all(p(G, op) for p in predicates)

    check.__doc__ = " and ".join(describe_predicate(p) for p in predicates)
    return check


def describe_predicate(predicate: Predicate) -> str:
    """The condition ``predicate`` checks, in words: the first line of its docstring.

    >>> describe_predicate(rank_is(4))
    'its output has 4 dimensions'
    """
    doc = (predicate.__doc__ or "").strip().splitlines()
    return doc[0].rstrip(".") if doc else getattr(predicate, "__name__", "a condition")


def int8_requantize(G: nx.MultiDiGraph, op: Op) -> bool:
    """it requantizes int8 to int8 (what int8 accelerators run of QUANTIZE)."""
    tensors = G.graph["tensors"]
    return tensors[op.inputs[0]].dtype == tensors[op.outputs[0]].dtype == "int8"


# --------------------------------------------------------------------------------------------
# the two target kinds
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpSupport:
    """One row of a support table: the inference types an op kind runs in, and when."""

    types: frozenset[str]
    when: Predicate | None = None


def _support_table(types: frozenset[str], kinds: Iterable[str], **special: OpSupport):
    table = {kind: OpSupport(types) for kind in kinds}
    table.update(special)
    return table


@dataclass(frozen=True)
class TableTarget:
    """A target declared by a support table (kind -> :class:`OpSupport`).

    Ops cost what the cost model says for this target's own name when the model knows that
    device; otherwise what it says for ``cost_device``, divided by ``speedup`` (the NPU example is
    TAC's NNAPI twice as fast under the ``tac`` model, and its own profile under ``roofline``).
    ``link`` = (per_byte, fixed) overrides the cost model's link into this device.
    """

    name: str
    table: Mapping[str, OpSupport]
    lowerings: tuple[Lowering, ...] = ()
    cost_device: str | None = None
    speedup: float = 1.0
    link: tuple[float, float] | None = None
    #: Support every kind but ``lacks`` (the CPU); the table is then ignored.
    runs_everything: bool = False
    #: With ``runs_everything``: the kinds it cannot run after all.
    lacks: frozenset[str] = frozenset()

    def supports(self, G: nx.MultiDiGraph, node: str, inference_type: str) -> bool:
        op = G.nodes[node]["op"]
        if self.runs_everything:
            return op.kind not in self.lacks
        row = self.table.get(op.kind)
        if row is None or inference_type not in row.types:
            return False
        if not activations_match(G, op, inference_type):
            return False
        return row.when is None or row.when(G, op)

    def refusal(self, G: nx.MultiDiGraph, node: str, inference_type: str) -> tuple[str, str] | None:
        """Why this device cannot run op ``node`` as ``inference_type``: (reason, detail) or None.

        The reason is ``"kind"``, ``"type"`` or ``"predicate"``; ``supports`` is exactly
        "no refusal". Used by :mod:`tacopt.partitioner.explain`.
        """
        op = G.nodes[node]["op"]
        if self.runs_everything:
            if op.kind in self.lacks:
                return "kind", f"{self.name} has no kernel for {op.kind}"
            return None
        row = self.table.get(op.kind)
        if row is None:
            return "kind", f"{self.name} does not run {op.kind}"
        if inference_type not in row.types:
            return "type", (
                f"{self.name} runs {op.kind} in {', '.join(sorted(row.types))} only, "
                f"not {inference_type}"
            )
        if not activations_match(G, op, inference_type):
            return "type", _mismatch(G, op, inference_type)
        if row.when is not None and not row.when(G, op):
            return "predicate", (
                f"{self.name} runs {op.kind} only when {describe_predicate(row.when)}"
            )
        return None

    @property
    def pricing(self) -> tuple[tuple[str, float], ...]:
        own = ((self.name, 1.0),)
        return own if self.cost_device is None else (*own, (self.cost_device, self.speedup))

    def switching_cost(self, src_device: str) -> tuple[float, float] | None:
        return self.link


@dataclass(frozen=True)
class SimpleTarget:
    """TAC's ``SimpleHardware``: every op but the ``denied`` kinds, ``advantage_over_cpu`` faster.

    Its ops are priced as the CPU's over the advantage. Its transfers are priced like those of
    ``link_as`` (default NNAPI, which is itself a ``SimpleHardware`` in TAC and switches at TAC's
    standard cross-hardware cost), unless ``link`` = (per_byte, fixed) gives its own.

    Examples
    --------
    >>> dsp = SimpleTarget("DSP", denied=frozenset({"SOFTMAX"}), advantage_over_cpu=4.0)
    >>> dsp.name, dsp.types, dsp.pricing, dsp.link_as
    ('DSP', frozenset({'FLOAT'}), (('CPU', 4.0),), 'NNAPI')
    """

    name: str
    denied: frozenset[str]
    advantage_over_cpu: float
    types: frozenset[str] = FLOAT
    lowerings: tuple[Lowering, ...] = ()
    link: tuple[float, float] | None = None
    link_as: str = "NNAPI"

    def supports(self, G: nx.MultiDiGraph, node: str, inference_type: str) -> bool:
        op = G.nodes[node]["op"]
        return (
            op.kind not in self.denied
            and op.kind not in _NEVER_OFFLOADED
            and inference_type in self.types
            and activations_match(G, op, inference_type)
        )

    def refusal(self, G: nx.MultiDiGraph, node: str, inference_type: str) -> tuple[str, str] | None:
        """Why this device cannot run op ``node``: (reason, detail), or None (see TableTarget)."""
        op = G.nodes[node]["op"]
        if op.kind in self.denied:
            return "kind", f"{self.name} denies {op.kind}"
        if op.kind in _NEVER_OFFLOADED:
            return "kind", f"{op.kind} calls nested graphs or holds state: it stays on the CPU"
        if inference_type not in self.types:
            return "type", (
                f"{self.name} runs {', '.join(sorted(self.types))} only, not {inference_type}"
            )
        if not activations_match(G, op, inference_type):
            return "type", _mismatch(G, op, inference_type)
        return None

    @property
    def pricing(self) -> tuple[tuple[str, float], ...]:
        return (("CPU", self.advantage_over_cpu),)

    def switching_cost(self, src_device: str) -> tuple[float, float] | None:
        return self.link


#: Ops that call nested graphs or hold state stay on the CPU whatever a deny-list says.
_NEVER_OFFLOADED = frozenset(
    {
        "WHILE",
        "IF",
        "CALL_ONCE",
        "CALL",
        "VAR_HANDLE",
        "READ_VARIABLE",
        "ASSIGN_VARIABLE",
        "STABLEHLO_COMPOSITE",
    }
)

# --------------------------------------------------------------------------------------------
# built-in tables
# --------------------------------------------------------------------------------------------

#: TAC gpu_hardware.cc (float only): the kinds TAC registers on the GPU, one list in
#: :data:`tacopt.cost_models.tac.GPU_OPS`, less CUSTOM (tacopt's custom ops run on the CPU by
#: their numpy kernels). SLICE / CONCATENATION on 4-D tensors only, so the PadSlice / PadConcat
#: lowerings apply to lower ranks as in TAC's GPU transformations.
GPU_TABLE = _support_table(
    FLOAT,
    sorted(set(GPU_OPS) - {"CUSTOM"}),
    SLICE=OpSupport(FLOAT, rank_is(4)),
    CONCATENATION=OpSupport(FLOAT, rank_is(4)),
)

#: The NNAPI delegate's common ops in float, int8 and uint8 (TAC nnapi_hardware.cc adds PACK and
#: SQUARED_DIFFERENCE); MEAN is left out: TAC lowers it to AVERAGE_POOL_2D for NNAPI.
NNAPI_TABLE = _support_table(
    FLOAT | QUANTIZED,
    ["ABS", "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTH_TO_SPACE",
     "DEPTHWISE_CONV_2D", "EXP", "FULLY_CONNECTED", "HARD_SWISH", "L2_NORMALIZATION", "LOG",
     "LOGISTIC", "MAX_POOL_2D", "MAXIMUM", "MINIMUM", "MUL", "NEG", "PACK", "PAD", "PADV2",
     "PRELU", "RELU", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "RSQRT",
     "SLICE", "SOFTMAX", "SPACE_TO_DEPTH", "SQRT", "SQUARED_DIFFERENCE", "SQUEEZE",
     "STRIDED_SLICE", "SUB", "TANH", "TRANSPOSE", "TRANSPOSE_CONV"],
    DIV=OpSupport(FLOAT),
    QUANTIZE=OpSupport(QUANTIZED, int8_requantize),
)  # fmt: skip

#: An int8-only NPU / DSP: convolutions, pools and element-wise ops on 4-D tensors; no
#: FULLY_CONNECTED (lowered to CONV_2D) and no MEAN (lowered to AVERAGE_POOL_2D).
NPU_TABLE = _support_table(
    frozenset({"QUANTIZED_INT8"}),
    ["ADD", "AVERAGE_POOL_2D", "CONV_2D", "DEPTHWISE_CONV_2D", "HARD_SWISH", "LOGISTIC",
     "MAX_POOL_2D", "MUL", "PAD", "RELU", "RELU6", "RESHAPE", "TANH"],
    CONCATENATION=OpSupport(frozenset({"QUANTIZED_INT8"}), rank_is(4)),
    QUANTIZE=OpSupport(frozenset({"QUANTIZED_INT8"}), int8_requantize),
)  # fmt: skip

# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------

_TARGETS: Registry[Target] = Registry("device", TargetError)


def register_target(target: Target, *, replace: bool = False) -> Target:
    """Register ``target`` under its (upper-cased) name and return it.

    ``replace=True`` replaces a device of the same name (re-running a notebook cell).

    Raises
    ------
    TargetError
        If the name is taken (and ``replace`` is False) or the object lacks a part of the
        :class:`Target` protocol.

    Examples
    --------
    >>> register_target(SimpleTarget("GPU", frozenset(), 2.0))
    Traceback (most recent call last):
    ...
    tacopt.partitioner.targets.TargetError: device 'GPU' is already registered
    """
    if not isinstance(target, Target):
        raise TargetError(
            f"{target!r} is not a Target (needs name, lowerings, supports, "
            "pricing, switching_cost)"
        )
    name = target.name.upper()
    if name != target.name:
        raise TargetError(f"device name '{target.name}' must be upper-case")
    return _TARGETS.add(name, target, replace=replace)


def target_names() -> tuple[str, ...]:
    """Registered device names, sorted."""
    return _TARGETS.names()


def get_target(name: str) -> Target:
    """The target registered as ``name`` (case-insensitive); :class:`TargetError` if unknown."""
    return _TARGETS.get(name.strip().upper())


def resolve_devices(devices: str | Sequence[str | Target]) -> tuple[Target, ...]:
    """Targets for a device list, in order, with the CPU appended when absent.

    The string form ``"GPU,CPU"`` and a sequence (of names, :class:`Target` objects or both)
    behave the same: names are case-insensitive, and a :class:`Target` object is used as given
    (it need not be registered). This is the one place device lists are checked.

    Parameters
    ----------
    devices : str or sequence of (str or Target)
        Devices in order of preference.

    Returns
    -------
    tuple of Target
        One per device, ``CPU`` last unless listed.

    Raises
    ------
    TargetError
        For an empty list, an empty element (``"GPU,,CPU"``), an unknown device, or a device
        listed twice.

    Examples
    --------
    >>> [t.name for t in resolve_devices(["gpu", NNAPI])]
    ['GPU', 'NNAPI', 'CPU']
    >>> resolve_devices("GPU,,CPU")
    Traceback (most recent call last):
    ...
    tacopt.partitioner.targets.TargetError: empty device name in 'GPU,,CPU'
    """
    given = devices.split(",") if isinstance(devices, str) else list(devices)
    shown = devices if isinstance(devices, str) else ",".join(_device_label(d) for d in given)
    if not given or (isinstance(devices, str) and not devices.strip()):
        raise TargetError(f"empty device list; known: {', '.join(target_names())}")
    targets: list[Target] = []
    for item in given:
        if isinstance(item, str):
            if not item.strip():
                raise TargetError(f"empty device name in {shown!r}")
            targets.append(get_target(item))
        elif isinstance(item, Target):
            targets.append(item)
        else:
            raise TargetError(f"{item!r} in the device list is neither a name nor a Target")
    seen: set[str] = set()
    for t in targets:
        if t.name in seen:
            raise TargetError(f"device '{t.name}' is listed twice in {shown!r}")
        seen.add(t.name)
    if "CPU" not in seen:
        targets.append(get_target("CPU"))
    return tuple(targets)


def _device_label(item: object) -> str:
    return item if isinstance(item, str) else str(getattr(item, "name", item))


#: The CPU runs what LiteRT's CPU kernels run: every kind but the fused kinds that only exist in
#: tacopt's fused graphs (lowered back to their primitive ops there).
CPU = register_target(
    TableTarget("CPU", {}, runs_everything=True, lacks=FUSION_ONLY_KINDS)
)
GPU = register_target(TableTarget("GPU", GPU_TABLE))
#: NNAPI is an API, not a chip: the driver hands the ops to the vendor's accelerator, so a model
#: without an NNAPI price (roofline) prices it as the NPU.
NNAPI = register_target(TableTarget("NNAPI", NNAPI_TABLE, cost_device="NPU"))
#: The NPU example: its own price where the model has one (roofline), else TAC's NNAPI x 2.
NPU = register_target(TableTarget("NPU", NPU_TABLE, cost_device="NNAPI", speedup=2.0))


def pricing_device(target: Target, cost_model: CostModel) -> tuple[str, float]:
    """The device whose prices ``target`` uses under ``cost_model``, and the speedup to divide by.

    The first of ``target.pricing`` the model knows (a model that lists no ``devices`` knows
    every device).

    Raises
    ------
    TargetError
        When the model knows none of them.

    Examples
    --------
    >>> from tacopt.cost_models.base import get_cost_model
    >>> pricing_device(NPU, get_cost_model("tac")), pricing_device(NPU, get_cost_model("roofline"))
    (('NNAPI', 2.0), ('NPU', 1.0))
    >>> pricing_device(NNAPI, get_cost_model("roofline"))
    ('NPU', 1.0)
    """
    known = tuple(getattr(cost_model, "devices", ()) or ())
    for device, speedup in target.pricing:
        if not known or device in known:
            return device, float(speedup)
    names = ", ".join(d for d, _ in target.pricing)
    raise TargetError(
        f"cost model '{getattr(cost_model, 'name', cost_model)}' prices none of {names} "
        f"(the devices {target.name} is priced as); it knows {', '.join(known)}"
    )
