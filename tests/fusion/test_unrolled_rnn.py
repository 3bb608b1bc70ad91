"""An LSTM unrolled step by step (litert-torch's ``torch.nn.LSTM``) -> one fused LSTM, in LiteRT."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.fusion.fuse import fuse, op_histogram
from tacopt.fusion.ir import ops_of
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import rehydrate
from tests.fusion.test_lstm import fuse_and_compare, with_constants

T, B, N_IN, H = 4, 1, 3, 5


def unrolled_graph(*, first_bias_is_b_hh: bool = True, h_out: bool = False, seed: int = 0):
    """torch.nn.LSTM as litert-torch writes it, from zero states::

    x ─ FC(W_ih, b_ih) ─ RESHAPE ─┬─ SLICE(0) + b_hh ──────────── gates ─ c_0, h_0 ─┐
                                  ├─ SLICE(1) + FC(h_0, W_hh, b_hh) ─ gates ─ h_1 ─┤
                                  └─ ...                                           ├─ CONCAT
                                                                  RESHAPE ◄────────┘
    """
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, shape).astype(np.float32)

    b = GraphBuilder("torch_lstm")
    x = b.input("x", (B, T, N_IN))
    w_hh, b_hh = b.const(w(4 * H, H)), w(4 * H)
    b_hh_name = b.const(b_hh)
    first = b_hh.reshape(1, 4 * H) if first_bias_is_b_hh else w(1, 4 * H)
    xp = b.op("FULLY_CONNECTED", x, w(4 * H, N_IN), w(4 * H), keep_num_dims=True)
    xp = b.op("RESHAPE", xp, np.array([T, B, 4 * H], np.int32))
    hs, h, c = [], None, None
    for t in range(T):
        xs = b.op("SLICE", xp, np.array([t, 0, 0], np.int32), np.array([1, B, 4 * H], np.int32),
                  shape=(1, B, 4 * H))  # fmt: skip
        if h is None:
            z = b.op("ADD", xs, first)
        else:
            z = b.op("ADD", b.op("FULLY_CONNECTED", h, w_hh, b_hh_name), xs)

        def gate(k: int) -> str:
            begin, size = np.array([0, 0, k * H], np.int32), np.array([1, B, H], np.int32)
            return b.op("SLICE", z, begin, size, shape=(1, B, H))  # noqa: B023

        i, g, o = gate(0), gate(2), gate(3)  # torch's order: i, f, g, o
        new = b.op("MUL", b.op("LOGISTIC", i), b.op("TANH", g))
        if c is not None:
            new = b.op("ADD", b.op("MUL", b.op("LOGISTIC", gate(1)), c), new)
        c = new
        h = b.op("MUL", b.op("LOGISTIC", o), b.op("TANH", c))
        hs.append(h)
    seq = b.op("CONCATENATION", *hs, axis=0)
    y = b.op("RESHAPE", seq, np.array([B, T, H], np.int32))
    return b.build(outputs=[y, h] if h_out else [y])


def test_unrolled_lstm_fuses_to_one_lstm(tmp_path):
    r = fuse_and_compare(unrolled_graph(), tmp_path)
    assert r.counts == {"unrolled_lstm": 1}
    assert op_histogram(r.graph) == {"UNIDIRECTIONAL_SEQUENCE_LSTM": 1}
    (lstm,) = [op for _, op in ops_of(r.graph) if op.kind == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert lstm.options["time_major"] is False and lstm.inputs[0] == "x"


@pytest.mark.parametrize(
    "change", [{"first_bias_is_b_hh": False}, {"h_out": True}], ids=["not_zero_states", "h_read"]
)
def test_unrolled_lstm_guards_keep_the_steps(change):
    # step 0 not from zero states, or a step's state read outside: nothing fuses
    G = unrolled_graph(**change)
    r = fuse(G)
    assert "unrolled_lstm" not in r.counts
    assert op_histogram(r.graph)["LOGISTIC"] == op_histogram(G)["LOGISTIC"]


def test_torch_lstm_zoo_model_fuses(zoo_dir, tmp_path):
    G = rehydrate(read_tflite(zoo_dir / "torch__nn_lstm_float32.tflite"), seed=0)
    assert "unrolled_lstm" not in fuse(G).counts  # rehydrated: step 0's bias is not b_hh
    T_ = G.graph["tensors"]
    recurrent = next(
        op
        for _, op in ops_of(G)
        if op.kind == "FULLY_CONNECTED" and any(o.kind == "MUL" and op.inputs[0] in o.outputs
                                                for _, o in ops_of(G))
    )  # fmt: skip
    b_hh = T_[recurrent.inputs[2]].data()
    first = next(
        t
        for _, op in ops_of(G)
        if op.kind == "ADD"
        for t in op.inputs
        if T_[t].is_constant and T_[t].shape == (1, b_hh.size)
    )
    r = fuse_and_compare(with_constants(G, {first: b_hh.reshape(1, -1)}), tmp_path)
    assert r.counts == {"unrolled_lstm": 1} and r.ops_before > 1000 and r.ops_after == 6
