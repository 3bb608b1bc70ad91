"""Named model zoos: folders of .tflite files and synthetic generators, from 10 to 100,000 units.

A zoo is a list of :class:`ZooItem` s. An item is a small, picklable description of one model
(a file path, or a generator name and a size), so that a study can ship it to a worker process or
a Dask worker, which then calls :func:`load_item` to get the real thing: an IR graph (the
partitioner builds the pick problem from it) or, for the layered-DAG generator, a pick problem.

Zoo specs (``tacopt bench --zoo SPEC``):

==========================  =====================================================================
``bundled``                 the structure-only models in ``benchmarks/models/``
``shared[:PATH]``           the shared zoo (48 real models): ``PATH``, else the first
                            ``shared/zoo`` in the current folder or a parent (``../shared/zoo``
                            beside a clone), else beside the clone tacopt runs from
                            (:func:`shared_zoo`)
``folder:PATH``             every ``*.tflite`` in ``PATH`` (sorted)
``transformer[:N,...]``     encoder stacks of N layers (IR graphs; ~39 ops per layer)
``resnet[:N,...]``          ResNet-like chains of N residual blocks with skips (IR graphs)
``resnet-int8[:N,...]``     the same, int8-quantized
``layered[:N,...]``         random layered DAGs of N units (pick problems)
==========================  =====================================================================

More zoos plug in with :func:`register_zoo`.

Examples
--------
>>> [item.name for item in resolve_zoo("transformer:1,2")]
['transformer_L1', 'transformer_L2']
>>> G = load_item(resolve_zoo("resnet:2")[0])
>>> G.number_of_nodes()
12
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import networkx as nx
import numpy as np

from tacopt.errors import TacoptError
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.partitioner.problem.synthetic import layered_dag_problem
from tacopt.registry import Registry, resolve_spec

#: Folder of the models bundled with the project.
BUNDLED_DIR = Path(__file__).resolve().parent / "models"
#: The shared zoo's folder, relative to the folder that holds it (``../shared/zoo`` of a clone).
SHARED_SUBDIR = Path("shared") / "zoo"


def shared_zoo_candidates(cwd: Path) -> tuple[Path, ...]:
    """Where zoo ``shared`` is looked for, in order.

    ``shared/zoo`` in ``cwd`` and each of its parents (from a clone's root, ``../shared/zoo``),
    then beside the source clone this package runs from, when it runs from one (an editable
    install; a plain ``pip install .`` copies the package into site-packages, away from it).

    >>> [str(p) for p in shared_zoo_candidates(Path("/a/clone"))][:3]
    ['/a/clone/shared/zoo', '/a/shared/zoo', '/shared/zoo']
    """
    found = [folder / SHARED_SUBDIR for folder in (cwd, *cwd.parents)]
    clone = Path(__file__).resolve().parents[1]
    if (clone / "pyproject.toml").is_file():
        found.append(clone.parent / SHARED_SUBDIR)
    return tuple(dict.fromkeys(found))


def shared_zoo(path: str | None = None, *, cwd: Path | None = None) -> Path:
    """The shared zoo's folder: ``path`` when given, else the first of
    :func:`shared_zoo_candidates` that exists (``cwd`` defaults to the current folder).

    Raises
    ------
    BenchmarkError
        When ``path`` is not a folder, or no candidate exists: one line naming where it looked.
    """
    if path:
        if not Path(path).is_dir():
            raise BenchmarkError(f"zoo 'shared:{path}': {path} is not a folder")
        return Path(path)
    here = (Path.cwd() if cwd is None else cwd).resolve()
    candidates = shared_zoo_candidates(here)
    for folder in candidates:
        if folder.is_dir():
            return folder
    above = {folder / SHARED_SUBDIR for folder in (here, *here.parents)}
    clone = "".join(f", nor at {c}" for c in candidates if c not in above)
    raise BenchmarkError(
        f"zoo 'shared': no {SHARED_SUBDIR} in {here} or a folder above it{clone}; "
        "run from a clone with ../shared beside it, or give --zoo shared:PATH"
    )


class BenchmarkError(TacoptError):
    """A study that cannot run: unknown zoo, empty folder, bad study option, unreadable results."""


@dataclass(frozen=True, slots=True)
class ZooItem:
    """One model of a zoo, as a picklable description.

    ``kind`` is ``"tflite"`` (``source`` is a file path), ``"graph"`` (``source`` names a graph
    generator, ``size`` its size) or ``"problem"`` (a pick-problem generator called with
    ``size`` and ``seed``). A generator is a built-in name or an importable ``pkg.mod:function``.
    """

    name: str
    zoo: str
    kind: str
    source: str
    size: int = 0
    seed: int = 0


class ZooFactory(Protocol):
    """A zoo: called with the text after ``NAME:`` in the spec (or ``None``), returns its items."""

    def __call__(self, arg: str | None, /) -> Sequence[ZooItem]: ...


_ZOOS: Registry[ZooFactory] = Registry("zoo", BenchmarkError)


def register_zoo(name: str, factory: ZooFactory, *, replace: bool = False) -> None:
    """Register a zoo under ``name``; raises :class:`BenchmarkError` if the name is taken
    (unless ``replace``).

    Examples
    --------
    >>> register_zoo("doc-example", lambda arg: [ZooItem("m", "doc-example", "graph", "resnet", 1)])
    >>> [i.name for i in resolve_zoo("doc-example")]
    ['m']
    """
    _ZOOS.add(name, factory, replace=replace)


def known_zoos() -> list[str]:
    """Names of the registered zoos, sorted."""
    return list(_ZOOS.names())


def resolve_zoo(spec: str) -> list[ZooItem]:
    """The items of the zoo named by ``spec`` (``NAME`` or ``NAME:ARG``).

    Parameters
    ----------
    spec : str
        A registered zoo name, optionally followed by ``:`` and an argument (a folder, sizes).

    Returns
    -------
    list of ZooItem

    Raises
    ------
    BenchmarkError
        For an unknown zoo (the message lists the known ones), a bad argument or an empty zoo.

    Examples
    --------
    >>> [(i.name, i.size) for i in resolve_zoo("layered:10,100")]
    [('layered_N10', 10), ('layered_N100', 100)]
    """
    name, _, arg = spec.partition(":")
    factory = _ZOOS.find(name)
    if factory is None:
        raise BenchmarkError(f"unknown zoo {spec!r}; known zoos: {', '.join(known_zoos())}")
    items = list(factory(arg or None))
    if not items:
        raise BenchmarkError(f"zoo {spec!r} has no models")
    return items


def load_item(item: ZooItem) -> nx.MultiDiGraph | Any:
    """Materialise ``item``: an IR graph for ``tflite`` / ``graph`` items, else a pick problem.

    Examples
    --------
    >>> load_item(ZooItem("t", "x", "graph", "transformer", 1)).number_of_nodes()
    39
    """
    if item.kind == "tflite":
        return read_tflite(item.source)
    if item.kind == "graph":
        return _generator(item, GRAPH_GENERATORS)(item.size)
    if item.kind == "problem":
        return _generator(item, PROBLEM_GENERATORS)(item.size, item.seed)
    raise BenchmarkError(f"zoo item {item.name!r}: unknown kind {item.kind!r}")


def _generator(item: ZooItem, known: dict[str, Callable[..., Any]]) -> Callable[..., Any]:
    """A built-in generator by name, or ``pkg.mod:function`` imported (so that the zoos users
    register in their own module also load in worker processes, which start afresh)."""
    if item.source in known:
        return known[item.source]
    if ":" not in item.source:
        raise BenchmarkError(
            f"zoo item {item.name!r}: unknown generator {item.source!r}; known: "
            f"{', '.join(sorted(known))} (or give pkg.mod:function)"
        )
    return resolve_spec(item.source, f"zoo item {item.name!r}", BenchmarkError)


# ---------------------------------------------------------------------------------------------
# folders


def folder_zoo(path: str | Path, *, zoo: str | None = None) -> list[ZooItem]:
    """One item per ``*.tflite`` file in ``path``, sorted by file name.

    Raises
    ------
    BenchmarkError
        If ``path`` is not a folder or holds no .tflite file.
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise BenchmarkError(f"zoo folder {str(folder)!r} is a file, not a folder")
    if not folder.is_dir():
        raise BenchmarkError(f"zoo folder {str(folder)!r} does not exist")
    files = sorted(folder.glob("*.tflite"))
    if not files:
        raise BenchmarkError(f"zoo folder {str(folder)!r} holds no .tflite file")
    label = zoo or f"folder:{folder}"
    return [ZooItem(f.stem, label, "tflite", str(f)) for f in files]


def _folder(arg: str | None) -> list[ZooItem]:
    if not arg:
        raise BenchmarkError("zoo 'folder' needs a path: folder:PATH")
    return folder_zoo(arg)


def _bundled(arg: str | None) -> list[ZooItem]:
    return folder_zoo(BUNDLED_DIR, zoo="bundled")


def _shared(arg: str | None) -> list[ZooItem]:
    return folder_zoo(shared_zoo(arg), zoo="shared")


# ---------------------------------------------------------------------------------------------
# synthetic generators


def _sizes(arg: str | None, default: Sequence[int], zoo: str) -> list[int]:
    if not arg:
        return list(default)
    try:
        sizes = [int(s.replace("_", "")) for s in arg.split(",") if s.strip()]
    except ValueError:
        raise BenchmarkError(f"zoo {zoo!r}: sizes must be integers, got {arg!r}") from None
    if not sizes or any(n < 1 or n > 100_000 for n in sizes):
        raise BenchmarkError(f"zoo {zoo!r}: sizes must be between 1 and 100000, got {arg!r}")
    return sizes


def _generated(zoo: str, kind: str, prefix: str, default: Sequence[int]) -> ZooFactory:
    def factory(arg: str | None) -> list[ZooItem]:
        return [ZooItem(f"{zoo}_{prefix}{n}", zoo, kind, zoo, n) for n in _sizes(arg, default, zoo)]

    return factory


class _Builder:
    """Appends ops named like the reader names them (``kind_index``) with their output tensors."""

    def __init__(self, dtype: str = "float32") -> None:
        self.dtype = dtype
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Op] = []

    def _quant(self, dtype: str) -> Quantization | None:
        return Quantization((0.05,), (0,)) if dtype in ("int8", "uint8") else None

    def input(self, name: str, shape: tuple[int, ...]) -> str:
        self.tensors[name] = Tensor(name, shape, self.dtype, quantization=self._quant(self.dtype))
        return name

    def const(self, shape: tuple[int, ...], dtype: str | None = None, data: Any = None) -> str:
        """A weight; its bytes are dropped (structure-only) unless ``data`` is given."""
        dtype = dtype or self.dtype
        name = f"const_{len(self.tensors)}"
        if data is not None:
            buffer = Buffer.from_bytes(np.asarray(data))
        else:
            size = math.prod(shape) * np.dtype(dtype).itemsize
            buffer = Buffer.placeholder(size)
        self.tensors[name] = Tensor(
            name, shape, dtype, quantization=self._quant(dtype), buffer=buffer
        )
        return name

    def int32(self, values: Sequence[int]) -> str:
        return self.const((len(values),), "int32", np.asarray(values, np.int32))

    def op(
        self, kind: str, inputs: Sequence[str | None], shape: tuple[int, ...], **options: Any
    ) -> str:
        name = f"{kind.lower()}_{len(self.ops)}"
        out = f"{name}:0"
        self.tensors[out] = Tensor(out, shape, self.dtype, quantization=self._quant(self.dtype))
        self.ops.append(Op(name, kind, tuple(inputs), (out,), options))
        return out

    def graph(self, name: str, inputs: Sequence[str], outputs: Sequence[str]) -> nx.MultiDiGraph:
        return make_graph(name, self.tensors.values(), self.ops, inputs, outputs)


_NO_ACT = {"fused_activation_function": "NONE"}


def _fully_connected(
    b: _Builder, x: str, shape: tuple[int, ...], n_out: int, act: str = "NONE"
) -> str:
    w = b.const((n_out, shape[-1]))
    bias = b.const((n_out,), "int32" if b.dtype == "int8" else b.dtype)
    return b.op(
        "FULLY_CONNECTED",
        [x, w, bias],
        (*shape[:-1], n_out),
        fused_activation_function=act,
        weights_format="DEFAULT",
        keep_num_dims=True,
        asymmetric_quantize_inputs=False,
    )


def _layer_norm(b: _Builder, x: str, shape: tuple[int, ...]) -> str:
    """The unfused layer norm that TFLite exports keep: MEAN, SQUARED_DIFFERENCE, ... ."""
    axis = b.int32([-1])
    reduced = (*shape[:-1], 1)
    mean = b.op("MEAN", [x, axis], reduced, keep_dims=True)
    sqd = b.op("SQUARED_DIFFERENCE", [x, mean], shape)
    var = b.op("MEAN", [sqd, axis], reduced, keep_dims=True)
    var_eps = b.op("ADD", [var, b.const((1,))], reduced, **_NO_ACT)
    inv = b.op("RSQRT", [var_eps], reduced)
    centred = b.op("SUB", [x, mean], shape, **_NO_ACT)
    normed = b.op("MUL", [centred, inv], shape, **_NO_ACT)
    scaled = b.op("MUL", [normed, b.const((shape[-1],))], shape, **_NO_ACT)
    return b.op("ADD", [scaled, b.const((shape[-1],))], shape, **_NO_ACT)


def transformer_stack(
    layers: int, *, seq: int = 64, dim: int = 128, heads: int = 4, ffn: int = 256
) -> nx.MultiDiGraph:
    """An encoder stack of ``layers`` blocks as an IR graph (39 ops per block).

    Each block: Q, K, V FULLY_CONNECTED, RESHAPE + TRANSPOSE into heads, BATCH_MATMUL, scale,
    SOFTMAX, BATCH_MATMUL, TRANSPOSE + RESHAPE back, output projection, residual ADD, layer norm
    (unfused), FULLY_CONNECTED + GELU + FULLY_CONNECTED, residual ADD, layer norm.

    Examples
    --------
    >>> from tacopt.fusion.ir import validate_graph
    >>> G = transformer_stack(2)
    >>> validate_graph(G); G.number_of_nodes()
    78
    """
    b = _Builder()
    dh = dim // heads
    x = b.input("tokens", (seq, dim))
    for _ in range(layers):
        split_shape, head_perm, back_perm = (
            b.int32([seq, heads, dh]),
            b.int32([1, 0, 2]),
            b.int32([1, 0, 2]),
        )
        heads_of = []
        for _proj in range(3):
            p = _fully_connected(b, x, (seq, dim), dim)
            r = b.op("RESHAPE", [p, split_shape], (seq, heads, dh))
            heads_of.append(b.op("TRANSPOSE", [r, head_perm], (heads, seq, dh)))
        q, k, v = heads_of
        scores = b.op(
            "BATCH_MATMUL",
            [q, k],
            (heads, seq, seq),
            adj_x=False,
            adj_y=True,
            asymmetric_quantize_inputs=False,
        )
        scaled = b.op("MUL", [scores, b.const((1,))], (heads, seq, seq), **_NO_ACT)
        probs = b.op("SOFTMAX", [scaled], (heads, seq, seq), beta=1.0)
        ctx = b.op(
            "BATCH_MATMUL",
            [probs, v],
            (heads, seq, dh),
            adj_x=False,
            adj_y=False,
            asymmetric_quantize_inputs=False,
        )
        t = b.op("TRANSPOSE", [ctx, back_perm], (seq, heads, dh))
        merged = b.op("RESHAPE", [t, b.int32([seq, dim])], (seq, dim))
        attn = _fully_connected(b, merged, (seq, dim), dim)
        x = _layer_norm(b, b.op("ADD", [x, attn], (seq, dim), **_NO_ACT), (seq, dim))
        h = b.op("GELU", [_fully_connected(b, x, (seq, dim), ffn)], (seq, ffn), approximate=False)
        out = _fully_connected(b, h, (seq, ffn), dim)
        x = _layer_norm(b, b.op("ADD", [x, out], (seq, dim), **_NO_ACT), (seq, dim))
    return b.graph(f"transformer_L{layers}", ["tokens"], [x])


def _conv(
    b: _Builder,
    x: str,
    shape: tuple[int, ...],
    c_out: int,
    k: int,
    stride: int = 1,
    act: str = "NONE",
) -> tuple[str, tuple[int, ...]]:
    n, h, w, c = shape
    out_shape = (n, -(-h // stride), -(-w // stride), c_out)
    filt = b.const((c_out, k, k, c))
    bias = b.const((c_out,), "int32" if b.dtype == "int8" else b.dtype)
    y = b.op(
        "CONV_2D",
        [x, filt, bias],
        out_shape,
        padding="SAME",
        stride_w=stride,
        stride_h=stride,
        dilation_w_factor=1,
        dilation_h_factor=1,
        fused_activation_function=act,
    )
    return y, out_shape


def resnet_chain(
    blocks: int, *, dtype: str = "float32", size: int = 56, width: int = 64
) -> nx.MultiDiGraph:
    """A ResNet-like chain of ``blocks`` residual blocks with skips, as an IR graph.

    A CONV_2D stem, then blocks of CONV_2D (RELU) -> CONV_2D -> ADD(skip) -> RELU; every fourth
    block halves the resolution and doubles the width (stride-2 conv, 1x1 projection on the
    skip); a MEAN + FULLY_CONNECTED + SOFTMAX head. ``dtype="int8"`` gives a quantized model.

    Examples
    --------
    >>> from tacopt.fusion.ir import validate_graph
    >>> G = resnet_chain(5, dtype="int8")
    >>> validate_graph(G); G.number_of_nodes()
    25
    """
    b = _Builder(dtype)
    shape: tuple[int, ...] = (1, size, size, 3)
    x, shape = _conv(b, b.input("image", shape), shape, width, 3, 1, "RELU")
    for i in range(blocks):
        down = i > 0 and i % 4 == 0 and shape[1] > 7
        stride, c_out = (2, shape[3] * 2) if down else (1, shape[3])
        y, y_shape = _conv(b, x, shape, c_out, 3, stride, "RELU")
        y, y_shape = _conv(b, y, y_shape, c_out, 3)
        skip = _conv(b, x, shape, c_out, 1, stride)[0] if down else x
        added = b.op("ADD", [y, skip], y_shape, **_NO_ACT)
        x, shape = b.op("RELU", [added], y_shape), y_shape
    pooled = b.op("MEAN", [x, b.int32([1, 2])], (1, shape[3]), keep_dims=False)
    logits = _fully_connected(b, pooled, (1, shape[3]), 1000)
    probs = b.op("SOFTMAX", [logits], (1, 1000), beta=1.0)
    return b.graph(f"resnet_B{blocks}_{dtype}", ["image"], [probs])


def layered_dag(n_units: int, seed: int) -> Any:
    """A random layered-DAG pick problem
    (``tacopt.partitioner.problem.synthetic.layered_dag_problem``)."""
    return layered_dag_problem(n_units, seed=seed)


#: Graph generators by name: ``size -> IR graph``.
GRAPH_GENERATORS: dict[str, Callable[[int], nx.MultiDiGraph]] = {
    "transformer": transformer_stack,
    "resnet": resnet_chain,
    "resnet-int8": lambda blocks: resnet_chain(blocks, dtype="int8"),
}
#: Pick-problem generators by name: ``(size, seed) -> PickProblem``.
PROBLEM_GENERATORS: dict[str, Callable[[int, int], Any]] = {"layered": layered_dag}


def _layered(arg: str | None) -> list[ZooItem]:
    return [
        ZooItem(f"layered_N{n}", "layered", "problem", "layered", n, seed=n)
        for n in _sizes(arg, (10, 100, 1_000, 10_000), "layered")
    ]


register_zoo("bundled", _bundled)
register_zoo("shared", _shared)
register_zoo("folder", _folder)
register_zoo("transformer", _generated("transformer", "graph", "L", (1, 2, 4, 8)))
register_zoo("resnet", _generated("resnet", "graph", "B", (4, 8, 16)))
register_zoo("resnet-int8", _generated("resnet-int8", "graph", "B", (4, 8, 16)))
register_zoo("layered", _layered)
