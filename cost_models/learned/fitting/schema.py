"""The schema of learned-model files and measurement records: what a loaded file must hold.

A learned model is data from a file anyone may hand over, so every field the model reads is
checked when the file is loaded (:func:`check_model_doc`): its type, its range, that numbers are
finite, that sizes stay within :data:`LIMITS`, and that every tree is a tree: children after
their parent (pre-order, hence no cycle), inside the tree, each node with at most one parent,
no deeper than ``LIMITS["tree_depth"]``, reading only the inputs the model feeds it. Prediction
then always ends: a step of :func:`~.trees.predict_stacked` moves each row to a later node.
Records (``tacopt measure``'s JSON lines) are checked the same way (:func:`check_records`).

Every refusal is one line naming the file and the field (``fits.ADD.w[2]: not a finite
number``). The checks are one function per part of the file, so a new field or format (a
compact file) adds one entry here.

Examples
--------
>>> check_model_doc({"format": "tacopt-learned", "overhead_us": 0.5,
...                  "fits": {"*": {"w": [1.0, 0.5]}}}, "m.json")
>>> check_model_doc({"format": "tacopt-learned", "overhead_us": 0.5, "version": 1e400,
...                  "fits": {"*": {"w": [1.0]}}}, "m.json")
Traceback (most recent call last):
...
tacopt.cost_models.protocol.CostModelError: learned model 'm.json': version: not a whole number ...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from tacopt.cost_models.learned.fitting.features import feature_names
from tacopt.cost_models.protocol import CostModelError
from tacopt.errors import TacoptError

#: Size limits of a learned model (far above what `tacopt fit` writes: 600-800 trees of at
#: most 61 nodes, 14,000 table entries, about 100 tree inputs).
LIMITS = {
    "trees": 100_000,  # trees in one set
    "tree_nodes": 1 << 16,  # nodes in one tree
    "tree_depth": 256,  # edges from a root to its deepest leaf
    "entries": 10_000_000,  # entries of a table, a dict or a list of names
    "weights": 64,  # weights of a linear fit
    "version": 1_000,
    "nesting": 2,  # an adapted model's own model (and its own)
    "shape_rank": 16,  # dimensions of a record's tensor
    "dim": 1 << 40,  # one dimension of a record's tensor
}
#: Any number but a tree's or a dimension: a time (µs), a size, a rate, a weight, within ±this;
#: products of two such stay far from float64's overflow (1e308).
SCALAR_LIMIT = 1e15

#: The least measured latency a record may hold (µs): a time, so above 0.
MIN_LATENCY_US = 1e-6

#: The format version of a kernel-set companion (``companions.NAME.version``, written by
#: :func:`~.companion.fit_companion`; kept here, which the records' reader imports).
COMPANION_VERSION = 1

#: The ``adapted.tree_inputs`` that adds the corrected net latency after the tree inputs.
SEES_NET = "features+log_net"

Error = Callable[[str], TacoptError]


class _Fields:
    """Reads fields of one document, raising one line that names the file and the field."""

    def __init__(self, source: str, error: Error, what: str) -> None:
        self.prefix = f"{what} '{source}'"
        self.error = error

    def fail(self, path: str, problem: str) -> TacoptError:
        return self.error(f"{self.prefix}: {path}: {problem}")

    def obj(self, value: Any, path: str, *, optional: bool = True) -> Mapping[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path, f"not an object ({type(value).__name__})")
        if len(value) > LIMITS["entries"]:
            raise self.fail(path, f"more than {LIMITS['entries']:,} entries")
        return value

    def array(self, value: Any, path: str, *, optional: bool = True) -> list[Any]:
        if value is None and optional:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"not a list ({type(value).__name__})")
        if len(value) > LIMITS["entries"]:
            raise self.fail(path, f"more than {LIMITS['entries']:,} entries")
        return value

    def number(
        self, value: Any, path: str, *, low: float = -SCALAR_LIMIT,
        high: float = SCALAR_LIMIT, whole: bool = False, infinite: bool = False,
    ) -> float:  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(path, f"not a number ({type(value).__name__})")
        if whole and not (isinstance(value, int) or (math.isfinite(value) and value.is_integer())):
            raise self.fail(path, f"not a whole number ({value!r})")
        if math.isnan(value) or (not infinite and math.isinf(value)):
            raise self.fail(path, f"not a finite number ({value!r})")
        if not low <= value <= high and not (infinite and math.isinf(value)):
            raise self.fail(path, f"{value!r} is out of range [{low:g}, {high:g}]")
        return float(value)

    def numbers(self, value: Any, path: str, *, sizes: Iterable[int] | None = None) -> None:
        items = self.array(value, path, optional=False)
        allowed = None if sizes is None else sorted(set(sizes))
        if allowed is not None and len(items) not in allowed:
            raise self.fail(path, f"{len(items)} numbers, not {' or '.join(map(str, allowed))}")
        for i, item in enumerate(items):
            self.number(item, f"{path}[{i}]")

    def string(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise self.fail(path, f"not a string ({type(value).__name__})")
        return value

    def strings(self, value: Any, path: str) -> list[str]:
        items = self.array(value, path)
        for i, item in enumerate(items):
            self.string(item, f"{path}[{i}]")
        return items

    def number_map(
        self, value: Any, path: str, *, low: float = -SCALAR_LIMIT,
        high: float = SCALAR_LIMIT,
    ) -> None:  # fmt: skip
        for key, item in self.obj(value, path).items():
            self.number(item, f"{path}.{key}", low=low, high=high)

    def trees(self, value: Any, path: str, width: int) -> None:
        """A set of trees reading rows of ``width`` inputs (:func:`check_trees`)."""
        check_trees(self.array(value, path), width, lambda problem: self.fail(path, problem))


def check_trees(trees: list[Any], width: int, fail: Callable[[str], TacoptError]) -> None:
    """Whether ``trees`` (``{"feature", "threshold", "left", "right", "value"}``, parallel
    lists, as :func:`~.trees.fit_lightgbm` writes them) are trees that a row of ``width``
    inputs walks down to a leaf in at most ``LIMITS["tree_depth"]`` steps.

    >>> leaf = {"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1], "value": [1.0]}
    >>> check_trees([leaf], 1, ValueError)
    >>> loop = {"feature": [0, -1], "threshold": [0.5, 0], "left": [0, -1], "right": [1, -1],
    ...         "value": [0, 1]}
    >>> check_trees([loop], 1, ValueError)
    Traceback (most recent call last):
    ...
    ValueError: tree 0 node 0: a child at index 0, not after its parent (a cycle)
    """
    keys = ("feature", "threshold", "left", "right", "value")
    if len(trees) > LIMITS["trees"]:
        raise fail(f"{len(trees):,} trees, more than {LIMITS['trees']:,}")
    columns: dict[str, list[Any]] = {k: [] for k in keys}
    sizes = []
    for t, tree in enumerate(trees):
        if not isinstance(tree, dict) or any(not isinstance(tree.get(k), list) for k in keys):
            raise fail(f"tree {t}: not an object of the lists {', '.join(keys)}")
        n = len(tree["feature"])
        if not 1 <= n <= LIMITS["tree_nodes"] or any(len(tree[k]) != n for k in keys):
            raise fail(f"tree {t}: lists of {[len(tree[k]) for k in keys]} nodes, not one "
                       f"length in [1, {LIMITS['tree_nodes']:,}]")  # fmt: skip
        sizes.append(n)
        for k in keys:
            columns[k] += tree[k]
    if not trees:
        return
    arrays = {}
    for k in keys:
        try:
            arrays[k] = np.asarray(columns[k], dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise fail(f"'{k}' holds a value that is not a number") from None
        if not np.isfinite(arrays[k]).all():
            raise fail(f"'{k}' holds a number that is not finite")
    for k in ("feature", "left", "right"):
        if (arrays[k] != np.round(arrays[k])).any() or (np.abs(arrays[k]) > 2**31).any():
            raise fail(f"'{k}' holds a number that is not a node or input index")
    starts = np.repeat(np.cumsum([0, *sizes[:-1]]), sizes)
    index = np.arange(len(starts)) - starts
    size = np.repeat(sizes, sizes)
    tree_of = np.repeat(np.arange(len(sizes)), sizes)
    feature = arrays["feature"].astype(np.int64)
    inner = feature >= 0
    if (feature < -1).any() or (feature >= width).any():
        bad = int(np.flatnonzero((feature < -1) | (feature >= width))[0])
        raise fail(f"tree {tree_of[bad]} node {index[bad]}: input {feature[bad]} is not one "
                   f"of the {width} the model reads")  # fmt: skip
    for k in ("left", "right"):
        child = arrays[k].astype(np.int64)
        bad_child = inner & ((child <= index) | (child >= size))
        if bad_child.any():
            bad = int(np.flatnonzero(bad_child)[0])
            why = "not after its parent (a cycle)" if child[bad] <= index[bad] else "past the tree"
            raise fail(f"tree {tree_of[bad]} node {index[bad]}: a child at index {child[bad]}, "
                       f"{why}")  # fmt: skip
    # Each node has at most one parent, so walking level by level visits each node once.
    children = np.concatenate([starts[inner] + arrays[k][inner].astype(np.int64)
                               for k in ("left", "right")])  # fmt: skip
    if len(children) and np.bincount(children, minlength=len(starts)).max() > 1:
        raise fail("a node with two parents (not a tree)")
    left = starts + arrays["left"].astype(np.int64)
    right = starts + arrays["right"].astype(np.int64)
    level = np.cumsum([0, *sizes[:-1]])
    for _ in range(LIMITS["tree_depth"] + 1):
        level = level[inner[level]]
        if not len(level):
            return
        level = np.concatenate([left[level], right[level]])
    raise fail(f"a tree deeper than {LIMITS['tree_depth']} levels")


def check_model_doc(
    doc: Any, source: str, *, error: Error = CostModelError, nesting: int = 0
) -> None:
    """Refuse, in one line naming the field, a learned-model document (``tacopt fit``'s format)
    that the model would misread, crash on or loop over; see the module's description.

    Raises
    ------
    CostModelError
        (or ``error``) naming ``source`` and the field.
    """
    f = _Fields(source, error, "learned model")
    doc = f.obj(doc, "the file", optional=False)
    if "version" in doc:
        f.number(doc["version"], "version", low=1, high=LIMITS["version"], whole=True)
    tree_features = f.strings(doc.get("tree_features"), "tree_features")
    tree_kinds = f.strings(doc.get("tree_kinds"), "tree_kinds")
    base = feature_names(reductions="keep_dims" in tree_features, runs="log_runs" in tree_features)
    width = len(tree_features) if "tree_features" in doc else len(base) + len(tree_kinds)

    fits = f.obj(doc.get("fits"), "fits", optional=False)
    if "*" not in fits:
        raise f.fail("fits", "no global fit '*'")
    for name, fit in fits.items():
        fit = f.obj(fit, f"fits.{name}", optional=False)
        f.numbers(fit.get("w"), f"fits.{name}.w", sizes=range(1, LIMITS["weights"] + 1))
        if len(fit["w"]) != len(fits["*"]["w"]):  # one design row prices them all
            most = len(fits["*"]["w"])
            raise f.fail(f"fits.{name}.w", f"{len(fit['w'])} weights, not the global fit's {most}")
    f.number_map(doc.get("table"), "table")
    for name, fit in f.obj(doc.get("movement"), "movement").items():
        f.numbers(fit, f"movement.{name}", sizes=(5, 6, 7))
    f.trees(doc.get("trees"), "trees", width)
    for name, trees in f.obj(doc.get("family_trees"), "family_trees").items():
        f.trees(trees, f"family_trees.{name}", width)
    for key in ("movement_kinds", "kind_groups", "family_groups", "group_features"):
        f.strings(doc.get(key), key)
    _check_kind_models(f, doc.get("kind_models"), len(base))
    f.number(doc.get("overhead_us"), "overhead_us", low=0)
    for key in ("net_floor_us", "in_model_spill", "while_trip_us", "per_op_us",
                "cold_weight_us_per_mb", "conversion_us_per_element",
                "fallback_flops_per_us"):  # fmt: skip
        if doc.get(key) is not None:
            f.number(doc[key], key, low=0)
    if doc.get("in_model_scale") is not None:
        f.number(doc["in_model_scale"], "in_model_scale", low=1e-9)
    fallback = f.obj(doc.get("fallback"), "fallback")  # the builtin kernels' invoke overhead
    if fallback:
        f.number(fallback.get("overhead_us"), "fallback.overhead_us", low=0)
        f.strings(fallback.get("kinds"), "fallback.kinds")
    for i, b in enumerate(f.array(doc.get("cache_bytes"), "cache_bytes")):
        f.number(b, f"cache_bytes[{i}]", low=0)
    if doc.get("device") is not None:
        f.string(doc["device"], "device")
    check_fingerprint(f, doc.get("fingerprint"), "fingerprint")
    for key in ("anchor_speed", "speed"):
        f.number_map(doc.get(key), key, low=1e-12)
    calibrated = f.obj(doc.get("calibrated"), "calibrated")
    if calibrated.get("speed_index") is not None:
        f.number(calibrated["speed_index"], "calibrated.speed_index", low=1e-12)
    _check_adapted(f, doc.get("adapted"), width, source, error, nesting)
    _check_companions(f, doc.get("companions"))


def _check_companions(f: _Fields, value: Any) -> None:
    """Kernel-set companions (:mod:`~.companion`): by ``RESOLVER/THREADS``, each with its
    version, kernel set, ratios and trees reading its features, kinds and the log net latency."""
    for name, comp in f.obj(value, "companions").items():
        path = f"companions.{name}"
        comp = f.obj(comp, path, optional=False)
        f.number(comp.get("version"), f"{path}.version", low=1, high=COMPANION_VERSION, whole=True)
        threads = int(f.number(comp.get("threads"), f"{path}.threads", low=1, high=1024,
                               whole=True))  # fmt: skip
        if f"{f.string(comp.get('resolver'), f'{path}.resolver')}/{threads}" != name:
            raise f.fail(path, "its resolver and threads do not make its name")
        f.number(comp.get("pairs"), f"{path}.pairs", low=0, high=2**53, whole=True)
        check_fingerprint(f, comp.get("fingerprint"), f"{path}.fingerprint")
        f.number_map(comp.get("anchor_speed"), f"{path}.anchor_speed", low=1e-12)
        f.number_map(comp.get("ratios"), f"{path}.ratios")
        for flag, on in f.obj(comp.get("kernel_kinds"), f"{path}.kernel_kinds").items():
            if not isinstance(on, bool):
                raise f.fail(f"{path}.kernel_kinds.{flag}", "not true or false")
        width = len(f.strings(comp.get("features"), f"{path}.features"))
        width += len(f.strings(comp.get("kinds"), f"{path}.kinds")) + 1  # and the log net
        for fam, trees in f.obj(comp.get("trees"), f"{path}.trees").items():
            f.trees(trees, f"{path}.trees.{fam}", width)


#: The weights of a kind model's log-linear base: 1 + its 4 base features, and a global-pool
#: step for reductions (kind_models' _BASE_W; not imported: kind_models reads records, which
#: are checked here, and tests/cost_models/test_schema.py holds the two equal).
KIND_WEIGHTS = (5, 6)


def _check_kind_models(f: _Fields, value: Any, n_base: int) -> None:
    for name, fit in f.obj(value, "kind_models").items():
        path = f"kind_models.{name}"
        fit = f.obj(fit, path, optional=False)
        f.numbers(fit.get("w"), f"{path}.w", sizes=KIND_WEIGHTS)
        kinds = f.strings(fit.get("kinds"), f"{path}.kinds")
        f.trees(fit.get("trees"), f"{path}.trees", n_base + len(kinds))
        if fit.get("range") is not None:
            span = f.array(fit["range"], f"{path}.range")
            if len(span) != 2:
                raise f.fail(f"{path}.range", "not [low, high]")
            low = f.number(span[0], f"{path}.range[0]", infinite=True)
            f.number(span[1], f"{path}.range[1]", low=low, infinite=True)
        if fit.get("overhead_us") is not None:
            f.number(fit["overhead_us"], f"{path}.overhead_us", low=0)


def _check_adapted(
    f: _Fields, value: Any, width: int, source: str, error: Error, nesting: int
) -> None:
    adapted = f.obj(value, "adapted")
    if not adapted:
        return
    if adapted.get("overhead_us") is not None:
        f.number(adapted["overhead_us"], "adapted.overhead_us", low=0)
    f.number_map(adapted.get("corrections"), "adapted.corrections")
    f.number_map(adapted.get("table"), "adapted.table")
    f.number_map(adapted.get("own_weights"), "adapted.own_weights")
    if adapted.get("companion") is not None:  # the model checks it is one of the companions
        f.string(adapted["companion"], "adapted.companion")
    f.strings(adapted.get("own_families"), "adapted.own_families")
    for fam, choice in f.obj(adapted.get("family_choice"), "adapted.family_choice").items():
        f.string(choice, f"adapted.family_choice.{fam}")  # the model checks it is a choice
    for fam, counts in f.obj(adapted.get("guard"), "adapted.guard").items():
        f.number_map(counts, f"adapted.guard.{fam}", low=0)
    check_fingerprint(f, adapted.get("base_fingerprint"), "adapted.base_fingerprint")
    inputs = adapted.get("tree_inputs")
    if inputs is not None:
        f.string(inputs, "adapted.tree_inputs")
    seen = width + (1 if inputs == SEES_NET else 0)
    f.trees(adapted.get("trees"), "adapted.trees", seen)
    for name, trees in f.obj(adapted.get("family_trees"), "adapted.family_trees").items():
        f.trees(trees, f"adapted.family_trees.{name}", seen)
    if adapted.get("own"):
        if nesting >= LIMITS["nesting"]:
            raise f.fail("adapted.own", f"models nested more than {LIMITS['nesting']} deep")
        own = f.obj(adapted["own"], "adapted.own")
        if own.get("format") != "tacopt-learned":
            raise f.fail("adapted.own.format", "not 'tacopt-learned'")
        check_model_doc(own, f"{source} adapted.own", error=error, nesting=nesting + 1)


def check_fingerprint(f: _Fields, value: Any, path: str) -> None:
    """A machine's fingerprint (``measurement.fingerprint``): names are strings, counts whole."""
    fp = f.obj(value, path)
    for key in ("arch", "cpu", "delegate", "family", "litert", "os", "resolver", "vendor"):
        if fp.get(key) is not None:
            f.string(fp[key], f"{path}.{key}")
    for key, low in (("cores", 1), ("threads", 1), ("l2_bytes", 0), ("l3_bytes", 0)):
        if fp.get(key) is not None:
            f.number(fp[key], f"{path}.{key}", low=low, high=2**53, whole=True)
    f.strings(fp.get("isa"), f"{path}.isa")


# --------------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------------


def check_records(
    records: list[dict[str, Any]], source: str, *, error: Error = CostModelError
) -> list[dict[str, Any]]:
    """``records`` (``tacopt measure``'s JSON lines, read from ``source``) if every field a fit
    or an evaluation reads has its type and a finite value in range; else one line naming the
    line and the field.

    >>> op = {"type": "op", "key": "k1", "kind": "ADD", "inference_type": "FLOAT",
    ...       "latency_us": 1.5, "flops": 8.0, "bytes": 96.0,
    ...       "inputs": [[[1, 8], "float32", False, False]], "outputs": []}
    >>> len(check_records([op], "r.jsonl"))
    1
    >>> check_records([{**op, "latency_us": "fast"}], "r.jsonl")
    Traceback (most recent call last):
    ...
    tacopt.cost_models.protocol.CostModelError: records file 'r.jsonl': line 1: latency_us: not ...
    """
    for i, record in enumerate(records):
        f = _Fields(source, error, "records file")
        f.prefix = f"records file '{source}': line {i + 1}"
        _check_finite(f, record, "the record")
        for key in ("key", "device", "model", "graph", "op", "resolver", "method"):
            if record.get(key) is not None:
                f.string(record[key], key)
        f.number_map(record.get("speed"), "speed", low=0)  # read from a record of any type
        kind = record.get("type")
        if kind == "op":
            _check_op_record(f, record)
        elif kind in ("skip", "folded"):
            _check_op_record(f, record, measured=False)
        elif kind == "model":
            _check_model_record(f, record)
        elif kind == "device":
            check_fingerprint(f, record.get("fingerprint"), "fingerprint")
    return records


def _check_op_record(f: _Fields, r: Mapping[str, Any], *, measured: bool = True) -> None:
    """An op record (a ``skip`` or ``folded`` one when not ``measured``): its key and kind
    strings, tensors ``[shape, dtype, ...]``, options an object, times finite and not negative;
    a measured op has all of them and its ``latency_us``."""
    for key in ("key", "kind", "inference_type"):
        if r.get(key) is not None or measured:
            f.string(r.get(key), key)
    for side in ("inputs", "outputs"):
        for j, tensor in enumerate(f.array(r.get(side), side, optional=not measured)):
            if tensor is not None:  # an omitted optional input
                _check_tensor(f, tensor, f"{side}[{j}]")
    _check_options(f, f.obj(r.get("options"), "options"))
    if measured:  # above 0: accuracy divides by it
        f.number(r.get("latency_us"), "latency_us", low=MIN_LATENCY_US)
        for key in ("flops", "bytes"):  # a fit reads both of every measured op
            f.number(r.get(key), key, low=0)
    _check_times(f, r)


#: Whole-number options the features compute with, and their least value.
_WHOLE_OPTIONS = {"stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1,
                  "filter_height": 1, "filter_width": 1, "depth_multiplier": 1, "block_size": 1,
                  "num": 0, "num_splits": 0, "values_count": 0, "batch_dims": -16, "axis": -16}


def _check_options(f: _Fields, options: Mapping[str, Any]) -> None:
    """An op's options as a record holds them: plain values or lists of them (SQUEEZE's
    ``squeeze_dims``, RESHAPE's ``new_shape``; no object, no nested list), and the whole
    numbers the features compute with in range."""
    for key, value in options.items():
        items = value if isinstance(value, list) else [value]
        if any(isinstance(v, (list, dict)) for v in items):
            raise f.fail(f"options.{key}", f"not a plain value ({type(value).__name__})")
        if key in _WHOLE_OPTIONS:
            f.number(value, f"options.{key}", low=_WHOLE_OPTIONS[key], high=2**31, whole=True)
        elif key in ("fused_activation_function", "padding"):  # names the features look up
            f.string(value, f"options.{key}")
    for pair in (("filter_height", "filter_width"), ("stride_h", "stride_w")):
        if (pair[0] in options) != (pair[1] in options):  # the features read them together
            raise f.fail("options", f"{pair[0]} and {pair[1]} come together")


def _check_model_record(f: _Fields, r: Mapping[str, Any]) -> None:
    """A whole model's record: ``latency_us`` a number (or null when untimed), and each of
    ``ops``, ``folded``, ``absorbed`` a list of ``[key, count]``."""
    f.string(r.get("model"), "model")  # a fit lists the models by name
    if r.get("latency_us") is not None:
        f.number(r["latency_us"], "latency_us", low=MIN_LATENCY_US)
    for part in ("ops", "folded", "absorbed"):
        for j, pair in enumerate(f.array(r.get(part), part, optional=part != "ops")):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise f.fail(f"{part}[{j}]", "not [key, count]")
            f.string(pair[0], f"{part}[{j}][0]")
            f.number(pair[1], f"{part}[{j}][1]", low=0, whole=True)
    _check_times(f, r)


#: Numbers of a record besides its times and sizes: counts, all finite and not negative.
_COUNTS = ("flops", "bytes", "repeats", "rejected", "loop_trips", "batch", "instances",
           "threads", "version")


def _check_times(f: _Fields, r: Mapping[str, Any]) -> None:
    """Every other number a fit reads: times, sizes and counts, finite and not negative."""
    for key, value in r.items():
        if key.endswith(("_us", "_bytes")) or key in _COUNTS:
            if key != "latency_us" and (value is not None or key != "dram_us"):
                f.number(value, key, low=0)


def _check_finite(f: _Fields, value: Any, path: str) -> None:
    """No NaN or infinity anywhere in ``value`` (a fit would carry it into every weight)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise f.fail(path, f"not a finite number ({value!r})")
    elif isinstance(value, int) and abs(value) > 2**53:  # beyond float64's whole numbers
        raise f.fail(path, f"{value} is too large a number")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_finite(f, item, f"{path}.{key}" if path != "the record" else str(key))
    elif isinstance(value, list):
        for j, item in enumerate(value):
            _check_finite(f, item, f"{path}[{j}]")


def _check_tensor(f: _Fields, tensor: Any, path: str) -> None:
    """``[shape, dtype, is_constant, is_quantized]``: whole dimensions of at least 1, a dtype."""
    items = f.array(tensor, path, optional=False)
    if len(items) < 2:
        raise f.fail(path, "not [shape, dtype, ...]")
    shape = f.array(items[0], f"{path} shape", optional=False)
    if len(shape) > LIMITS["shape_rank"]:
        raise f.fail(f"{path} shape", f"more than {LIMITS['shape_rank']} dimensions")
    for d, dim in enumerate(shape):
        # a measured tensor has every dimension (the features divide by and take logs of them)
        f.number(dim, f"{path} shape[{d}]", low=1, high=LIMITS["dim"], whole=True)
    f.string(items[1], f"{path} dtype")
    for k, flag in enumerate(items[2:4]):
        if not isinstance(flag, bool):
            raise f.fail(f"{path}[{k + 2}]", f"not true or false ({type(flag).__name__})")
    if len(items) > 5:
        raise f.fail(path, f"{len(items)} entries, not [shape, dtype, constant, quantized, values]")
    if len(items) == 5:  # a small integer constant's values (axes, permutations, paddings)
        values = f.array(items[4], f"{path}[4]", optional=False)
        for k, value in enumerate(values[:1024]):
            f.number(value, f"{path}[4][{k}]", low=-(2**31), high=2**31, whole=True)


__all__ = ["LIMITS", "check_fingerprint", "check_model_doc", "check_records", "check_trees"]
