"""Fuzzing with mutated real models: bad input gets one line and exit 2, never anything else.

The CI fuzz target (:func:`test_mutated_models_through_every_command`): at least 2,000 mutated
models of a campaign whose seed rotates with the date (``TACOPT_FUZZ_SEED`` fixes it; the seed is
in every failure message), structure-aware and byte-level (:mod:`tacopt.benchmarks.fuzz.models`),
each through the checker and ``tacopt inspect``, and at least 300 of them also through ``fuse``,
``partition`` at both granularities with ``--export``, and ``rehydrate``. They run in a worker
process whose address space is capped with ``RLIMIT_AS`` (2 GiB above its size after imports),
not under ``tracemalloc``: the cap makes an unbounded allocation fail at once instead of
swapping the machine, sees numpy's and the flatbuffer builder's memory alike, and costs nothing,
while tracemalloc slows every allocation and only reports a peak after it happened.

The reader-level tests below: mutations of real files (bit flips, truncation, byte overwrites,
and overwrites of the index fields: op inputs / outputs, opcode indices, tensor buffers, subgraph
inputs / outputs, WHILE body / cond indices, signature indices). A mutated file must either be
refused with one line (:class:`ModelFormatError` or :class:`GraphError`), or read into a graph
that :func:`validate_graph` accepts; IndexError, struct.error, a crash or a hang fail the test.
About 2,400 cases per run, deterministic (``derandomize=True``).
"""

from __future__ import annotations

import datetime
import functools
import os
import struct
from pathlib import Path

import ai_edge_litert.schema_py_generated as fb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tacopt.benchmarks.fuzz import models as fuzz_models
from tacopt.errors import GraphError, ModelFormatError
from tacopt.fusion.ir import validate_graph
from tacopt.fusion.tflite.reader import read_tflite
from tests.conftest import BUNDLED_DIR, ZOO_DIR

#: Small models with a spread of features: WHILE loops, fused LSTM, int8, attention, PyTorch.
FUZZ_MODELS = [
    "keras__text_lstm_float32.tflite",
    "keras__text_lstm_tfkeras_int8.tflite",
    "keras__text_gru_tfkeras_float32.tflite",
    "keras__text_transformer_float32.tflite",
    "keras__mobilenet_v2_float32.tflite",
    "torch__resnet18_float32.tflite",
]


@functools.cache
def _models() -> tuple[bytes, ...]:
    """The fuzzed files: from the shared zoo when present, else the bundled copies."""
    out = []
    for name in FUZZ_MODELS:
        path = ZOO_DIR / name if (ZOO_DIR / name).is_file() else BUNDLED_DIR / name
        if path.is_file():
            out.append(path.read_bytes())
    assert out, "no models to fuzz"
    return tuple(out)


def _check(data: bytes) -> None:
    try:
        G = read_tflite(data)
    except (ModelFormatError, GraphError) as exc:
        assert "\n" not in str(exc)
        return
    try:
        validate_graph(G)
    except GraphError:
        pass


def fuzz(max_examples: int) -> settings:
    return settings(_FUZZ, max_examples=max_examples)


_FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

model_index = st.integers(min_value=0, max_value=len(FUZZ_MODELS) - 1)


@fuzz(800)
@given(
    model=model_index,
    flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 7)), max_size=8, min_size=1),
)
def test_bit_flips(model: int, flips: list[tuple[float, int]]) -> None:
    data = bytearray(_models()[model % len(_models())])
    for where, bit in flips:
        data[min(int(where * len(data)), len(data) - 1)] ^= 1 << bit
    _check(bytes(data))


@fuzz(300)
@given(model=model_index, keep=st.floats(0, 1))
def test_truncation(model: int, keep: float) -> None:
    data = _models()[model % len(_models())]
    _check(data[: int(keep * (len(data) - 1))])


@fuzz(700)
@given(model=model_index, where=st.floats(0, 1), payload=st.binary(min_size=1, max_size=8))
def test_byte_overwrites(model: int, where: float, payload: bytes) -> None:
    data = bytearray(_models()[model % len(_models())])
    pos = min(int(where * len(data)), len(data) - len(payload))
    data[pos : pos + len(payload)] = payload
    _check(bytes(data))


def _index_sites(data: bytes) -> list[tuple[int, str]]:
    """(byte position, struct format) of every index field of a model."""
    model = fb.Model.GetRootAs(data, 0)
    sites: list[tuple[int, str]] = []

    def field(tab: object, slot: int, fmt: str) -> None:
        o = tab.Offset(slot)  # type: ignore[attr-defined]
        if o:
            sites.append((tab.Pos + o, fmt))  # type: ignore[attr-defined]

    def vector(tab: object, slot: int) -> None:
        o = tab.Offset(slot)  # type: ignore[attr-defined]
        if o:
            start, n = tab.Vector(o), tab.VectorLen(o)  # type: ignore[attr-defined]
            sites.extend((start + 4 * k, "<i") for k in range(n))

    for s in range(model.SubgraphsLength()):
        sg = model.Subgraphs(s)
        vector(sg._tab, 6)
        vector(sg._tab, 8)
        for t in range(sg.TensorsLength()):
            field(sg.Tensors(t)._tab, 8, "<I")
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            field(op._tab, 4, "<I")
            vector(op._tab, 6)
            vector(op._tab, 8)
            if op.BuiltinOptionsType() == fb.BuiltinOptions.WhileOptions:
                table = op.BuiltinOptions()
                field(table, 4, "<i")
                field(table, 6, "<i")
    for k in range(model.SignatureDefsLength()):
        sig = model.SignatureDefs(k)
        field(sig._tab, 10, "<I")
        for j in range(sig.InputsLength()):
            field(sig.Inputs(j)._tab, 6, "<I")
    return sites


@functools.cache
def _sites() -> tuple[list[tuple[int, str]], ...]:
    return tuple(_index_sites(d) for d in _models())


INDEX_VALUES = st.one_of(
    st.integers(-3, 3), st.integers(0, 2000), st.sampled_from([2**31 - 1, -(2**31), 65535])
)


@fuzz(600)
@given(model=model_index, site=st.floats(0, 1), value=INDEX_VALUES)
def test_index_corruption(model: int, site: float, value: int) -> None:
    m = model % len(_models())
    sites = _sites()[m]
    pos, fmt = sites[min(int(site * len(sites)), len(sites) - 1)]
    data = bytearray(_models()[m])
    if fmt == "<I":
        value &= 0xFFFFFFFF
    struct.pack_into(fmt, data, pos, value)
    _check(bytes(data))


def test_index_sites_cover_the_interesting_fields() -> None:
    sites = _sites()
    assert all(len(s) > 20 for s in sites)
    assert sum(len(s) for s in sites) > 1000


@pytest.mark.parametrize("name", FUZZ_MODELS)
def test_fuzzed_models_read_cleanly_unmutated(name: str) -> None:
    path = ZOO_DIR / name if (ZOO_DIR / name).is_file() else BUNDLED_DIR / name
    if not path.is_file():
        pytest.skip(f"{name} not available")
    validate_graph(read_tflite(Path(path)))


#: Cases per CI run, and how many of them also go through the pipeline commands.
CI_CASES = 2000
CI_PIPELINE = 300


def _ci_seed() -> int:
    """``TACOPT_FUZZ_SEED`` if set (to reproduce a failure), else today's date as YYYYMMDD."""
    fixed = os.environ.get("TACOPT_FUZZ_SEED")
    return int(fixed) if fixed else int(datetime.date.today().strftime("%Y%m%d"))


def test_mutated_models_through_every_command() -> None:
    seed = _ci_seed()
    print(f"fuzz seed {seed} (TACOPT_FUZZ_SEED={seed} reproduces this run)")
    sources = fuzz_models.load_sources()
    bundled = {p.name for p in BUNDLED_DIR.glob("*.tflite")}
    # The pipeline sample: the first cases mutating a bundled model (the zoo's large models
    # would spend the time budget rehydrating hundreds of MB).
    picks = (fuzz_models.pick_source(sources, seed, i)[1].name for i in range(CI_CASES))
    pipeline = [i for i, name in enumerate(picks) if name in bundled][:CI_PIPELINE]
    assert len(pipeline) == CI_PIPELINE
    runs = fuzz_models.run_cases(seed, range(CI_CASES), pipeline=pipeline, workers=2, chunk=250)
    outcomes = [o for chunk in runs for o in chunk]
    ran = {(o.index, o.command) for o in outcomes}
    assert len({i for i, _ in ran}) == CI_CASES
    assert sum((i, "rehydrate") in ran for i in pipeline) == CI_PIPELINE
    failures = [o for o in outcomes if o.outcome in fuzz_models.FAILURES]
    assert not failures, "\n".join(
        f"seed {seed} case {o.index} {o.command}: {o.outcome}: {o.detail} [{o.mutation}]"
        for o in failures[:20]
    )
    assert {o.outcome for o in outcomes} <= {"ok", "refused"}
    assert any(o.outcome == "ok" for o in outcomes if o.command == "export")
