"""The Keras-3 LSTM loop fusion, checked by execution in ai-edge-litert.

The models in ``tests/fusion/models/`` are small structure-only Keras 3 / tf-keras LSTMs (see
``make_rnn_models.py`` there); each test rehydrates one, fuses it, writes both with our writer and
runs both in LiteRT on the same inputs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from tacopt.fusion.fuse import FuseResult, fuse, op_histogram
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph, ops_of, validate_graph
from tacopt.fusion.tflite.litert import random_inputs, run_tflite
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import rehydrate
from tacopt.fusion.tflite.writer import write_tflite
from tacopt.fusion.unfuse import unfuse

MODELS_DIR = Path(__file__).parent / "models"
#: Relative error (max |fused - original| / max |original|) allowed on float32 outputs.
RTOL = 1e-5


def load_model(name: str, seed: int = 0) -> nx.MultiDiGraph:
    """A committed test model with random weights."""
    return rehydrate(read_tflite(MODELS_DIR / f"{name}_float32.tflite"), seed=seed)


def run_litert(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs of the model file ``path`` in LiteRT (the file as our writer wrote it)."""
    return run_tflite(path.read_bytes(), inputs, where=path.name)


def fuse_and_compare(G: nx.MultiDiGraph, tmp_path: Path, seed: int = 1) -> FuseResult:
    """Fuse ``G``; both models, written by our writer, give the same outputs in LiteRT."""
    validate_graph(G)
    r = fuse(G)
    validate_graph(r.graph)
    inputs = random_inputs(G, seed=seed)
    want = run_litert(write_tflite(G, tmp_path / "original.tflite"), inputs)
    got = run_litert(write_tflite(r.graph, tmp_path / "fused.tflite"), inputs)
    assert want.keys() == got.keys()
    for k in want:
        scale = float(np.abs(want[k]).max()) or 1.0
        assert float(np.abs(got[k] - want[k]).max()) / scale <= RTOL, k
    return r


def kinds(r: FuseResult, *names: str) -> dict[str, int]:
    hist = op_histogram(r.graph)
    return {k: hist.get(k, 0) for k in names}


def with_constants(G: nx.MultiDiGraph, values: dict[str, np.ndarray]) -> nx.MultiDiGraph:
    """``G`` with the given constants replaced (same shapes)."""
    T = dict(G.graph["tensors"])
    for t, v in values.items():
        T[t] = dataclasses.replace(T[t], buffer=Buffer.from_bytes(v.astype(np.float32)))
    G.graph["tensors"] = T
    for sub in G.graph.get("subgraphs", {}).values():
        assert not set(values) & set(sub.graph["tensors"])
    for _, _, k, d in G.edges(keys=True, data=True):
        d["tensor"] = T[k]
    return G


#: model -> (STRIDED_SLICE, REVERSE_V2, ADD, time_major) after fusion, besides the one fused
#: LSTM. The last step is our slice plus Keras' squeeze; go_backwards keeps the REVERSE_V2 in
#: front; the final h is the last step; an ADD copies an initial state that is not zero into the
#: state variable; Keras' layout ops on both sides of a whole sequence fold into time_major=False.
UNIDIRECTIONAL = {
    "k3_lstm_last": (2, 0, 0, True),
    "k3_lstm_seq": (0, 0, 0, False),
    "k3_lstm_seq_batch2": (0, 0, 0, False),
    "k3_lstm_backwards_seq": (0, 1, 0, True),
    "k3_lstm_backwards_last": (2, 1, 0, True),
    "k3_lstm_state_h": (1, 0, 0, True),
    "k3_lstm_initial_state": (0, 0, 2, False),
}


@pytest.mark.parametrize("name", sorted(UNIDIRECTIONAL))
def test_keras3_loop_fuses_to_one_unidirectional_lstm(name, tmp_path):
    r = fuse_and_compare(load_model(name), tmp_path)
    assert r.counts["lstm"] == 1 and r.graph.graph["subgraphs"] == {}
    assert kinds(r, "WHILE", "UNIDIRECTIONAL_SEQUENCE_LSTM") == {
        "WHILE": 0,
        "UNIDIRECTIONAL_SEQUENCE_LSTM": 1,
    }
    *want, time_major = UNIDIRECTIONAL[name]
    assert list(kinds(r, "STRIDED_SLICE", "REVERSE_V2", "ADD").values()) == want
    lstm = next(op for _, op in ops_of(r.graph) if op.kind == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    assert lstm.options["time_major"] is time_major


def test_initial_states_from_graph_inputs_are_copied_into_the_state_variables(tmp_path):
    r = fuse_and_compare(load_model("k3_lstm_initial_state"), tmp_path)
    lstm = next(op for _, op in ops_of(r.graph) if op.kind == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    T = r.graph.graph["tensors"]
    for slot in (18, 19):
        state = lstm.inputs[slot]
        assert T[state].is_variable and not T[state].is_constant
        (copy,) = [op for _, op in ops_of(r.graph) if state in op.outputs]
        assert copy.kind == "ADD" and copy.inputs[0] in r.graph.graph["inputs"]


def test_non_zero_constant_initial_states(tmp_path):
    G = load_model("k3_lstm_last")
    (loop,) = [op for _, op in ops_of(G) if op.kind == "WHILE"]
    rng = np.random.default_rng(5)
    T = G.graph["tensors"]
    G = with_constants(G, {t: rng.normal(size=T[t].shape) for t in loop.inputs[3:5]})
    r = fuse_and_compare(G, tmp_path)
    assert kinds(r, "WHILE", "ADD") == {"WHILE": 0, "ADD": 2}


def run_litert_steps(path: Path, steps: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """The (one) output of ``path`` for each input in turn, in one interpreter (state carried)."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    outs = []
    for inputs in steps:
        for d in it.get_input_details():
            it.set_tensor(d["index"], inputs[d["name"]])
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
    return outs


def test_stateful_lstm_keeps_its_state_in_the_fused_op_across_invocations(tmp_path):
    # Keras' stateful=True: READ_VARIABLE -> loop -> ASSIGN_VARIABLE of both states; the fused
    # op's variable states carry them from one invocation to the next instead
    G = load_model("k3_lstm_stateful")
    r = fuse_and_compare(G, tmp_path)
    main = {op.kind for _, op in ops_of(r.graph)}  # the initialisation graph stays
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in main
    assert not main & {"WHILE", "READ_VARIABLE", "ASSIGN_VARIABLE"}
    steps = [random_inputs(G, seed=s) for s in range(3)]
    want = run_litert_steps(write_tflite(G, tmp_path / "original.tflite"), steps)
    got = run_litert_steps(write_tflite(r.graph, tmp_path / "fused.tflite"), steps)
    assert np.abs(want[2] - want[0]).max() > 1e-3  # the state does carry over
    for w, g in zip(want, got):
        assert float(np.abs(g - w).max()) <= RTOL * float(np.abs(w).max())


def test_stateful_lstm_with_a_non_zero_initial_value_keeps_its_while():
    G = load_model("k3_lstm_stateful")
    (init,) = [
        S for name, S in G.graph["subgraphs"].items() if "body" not in name and "cond" not in name
    ]
    (assign,) = [op for _, op in ops_of(init) if op.kind == "ASSIGN_VARIABLE"][:1]
    T = dict(init.graph["tensors"])
    value = np.ones(T[assign.inputs[1]].shape, np.float32)
    T[assign.inputs[1]] = dataclasses.replace(T[assign.inputs[1]], buffer=Buffer.from_bytes(value))
    init.graph["tensors"] = T
    r = fuse(G)
    assert "lstm" not in r.counts and op_histogram(r.graph)["WHILE"] == 1


def with_int8_io(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """``G`` between int8 surroundings: QUANTIZE'd input -> DEQUANTIZE -> G -> QUANTIZE."""
    ((x,), (y,)) = G.graph["inputs"], G.graph["outputs"]
    T = G.graph["tensors"]
    q = Quantization((0.02,), (0,))
    tensors = [
        *T.values(),
        Tensor("x_int8", T[x].shape, "int8", quantization=q),
        Tensor("y_int8", T[y].shape, "int8", quantization=Quantization((0.01,), (0,))),
    ]
    ops = [
        Op("dequantize_in", "DEQUANTIZE", ("x_int8",), (x,)),
        *(op for _, op in ops_of(G)),
        Op("quantize_out", "QUANTIZE", (y,), ("y_int8",)),
    ]
    return make_graph(
        G.graph["name"],
        tensors,
        ops,
        ["x_int8"],
        ["y_int8"],
        model=G.graph["model"],
        subgraphs=G.graph["subgraphs"],
    )


@pytest.mark.parametrize("name", ["k3_lstm_seq", "k3_bilstm_concat_last"])
def test_loop_between_int8_surroundings_fuses(name, tmp_path):
    G = with_int8_io(load_model(name))
    validate_graph(G)
    r = fuse(G)
    validate_graph(r.graph)
    assert "WHILE" not in op_histogram(r.graph)
    inputs = random_inputs(G, seed=1)
    want = run_litert(write_tflite(G, tmp_path / "original.tflite"), inputs)["y_int8"]
    got = run_litert(write_tflite(r.graph, tmp_path / "fused.tflite"), inputs)["y_int8"]
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1  # one step of the int8 grid


def test_full_integer_lstms_stay_unidirectional(zoo_dir):
    # LiteRT's BIDIRECTIONAL_SEQUENCE_LSTM has no full-integer (8x8->16) kernel
    r = fuse(read_tflite(zoo_dir / "keras__text_bilstm_tfkeras_int8.tflite"))
    assert kinds(r, "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM") == {
        "UNIDIRECTIONAL_SEQUENCE_LSTM": 4,
        "BIDIRECTIONAL_SEQUENCE_LSTM": 0,
    }


def test_variable_tensor_initial_states_are_copied(tmp_path):
    # a variable tensor read as the initial state is copied: the fused op updates its own state
    # in place, and must not change a variable that others may read
    G = load_model("k3_lstm_last")
    (loop,) = [op for _, op in ops_of(G) if op.kind == "WHILE"]
    T = dict(G.graph["tensors"])
    for t in loop.inputs[3:5]:
        T[t] = dataclasses.replace(T[t], buffer=None, is_variable=True)
    G.graph["tensors"] = T
    for _, _, k, d in G.edges(keys=True, data=True):
        d["tensor"] = T[k]
    r = fuse_and_compare(G, tmp_path)
    lstm = next(op for _, op in ops_of(r.graph) if op.kind == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    copies = [op for _, op in ops_of(r.graph) if op.kind == "ADD"]
    assert sorted(c.outputs[0] for c in copies) == sorted(lstm.inputs[18:20])
    assert sorted(c.inputs[0] for c in copies) == sorted(loop.inputs[3:5])


def test_loop_whose_final_cell_state_is_read_keeps_its_while():
    # return_state=True with c used: the fused op does not return its cell state
    r = fuse(load_model("k3_lstm_state_hc"))
    assert "lstm" not in r.counts and kinds(r, "WHILE")["WHILE"] == 1


def test_rehydrated_text_lstm_fuses_to_one_unidirectional_lstm_equal_to_while(zoo_dir, tmp_path):
    # `tacopt rehydrate` gives the dropped initial states random values: they become state copies
    G = rehydrate(read_tflite(zoo_dir / "keras__text_lstm_float32.tflite"), seed=0)
    r = fuse_and_compare(G, tmp_path)
    assert kinds(r, "UNIDIRECTIONAL_SEQUENCE_LSTM", "WHILE") == {
        "UNIDIRECTIONAL_SEQUENCE_LSTM": 1,
        "WHILE": 0,
    }
    assert r.graph.graph["subgraphs"] == {}


#: model -> (merge_outputs, time_major, ops left besides the fused op). Keras 3: the two loops
#: fuse first. Keras' concat merge folds into merge_outputs (behind Keras 3's RESHAPE / TRANSPOSE
#: to batch major), those layout ops into time_major=False (not for a merged batch of 2: LiteRT
#: gets that wrong); the last-step variants slice the first step of the backward output.
BIDIRECTIONAL = {
    "k3_bilstm_concat_seq": (True, False, {}),
    "k3_bilstm_batch2": (True, True, {"TRANSPOSE": 2}),
    "k3_bilstm_separate_seq": (False, False, {}),
    "k3_bilstm_concat_last": (
        False,
        True,
        {"RESHAPE": 1, "STRIDED_SLICE": 4, "CONCATENATION": 1},
    ),
    "tfkeras_bilstm_concat_seq": (True, False, {}),
    "tfkeras_bilstm_separate_seq": (False, False, {}),
    "tfkeras_bilstm_concat_last": (False, False, {"STRIDED_SLICE": 2, "CONCATENATION": 1}),
    "tfkeras_bilstm_time_major": (True, True, {"RESHAPE": 1}),
}


@pytest.mark.parametrize("name", sorted(BIDIRECTIONAL))
def test_forward_backward_pair_fuses_to_one_bidirectional_lstm(name, tmp_path):
    r = fuse_and_compare(load_model(name), tmp_path)
    merged, time_major, rest = BIDIRECTIONAL[name]
    hist = op_histogram(r.graph)
    assert hist == {"BIDIRECTIONAL_SEQUENCE_LSTM": 1, **rest}
    (bidi,) = [op for _, op in ops_of(r.graph) if op.kind == "BIDIRECTIONAL_SEQUENCE_LSTM"]
    assert len(bidi.inputs) == 48 and len(bidi.outputs) == (1 if merged else 2)
    assert bidi.options["merge_outputs"] is merged
    assert bidi.options["time_major"] is time_major
    assert fuse(r.graph).counts == {}  # a fixed point


@pytest.mark.parametrize("name", ["k3_bilstm_concat_seq", "tfkeras_bilstm_separate_seq"])
def test_unfuse_lowers_a_bidirectional_lstm_to_two_unidirectional_ones(name, tmp_path):
    fused = fuse(load_model(name)).graph
    G = unfuse(fused)
    validate_graph(G)
    assert kinds(fuse_and_compare(G, tmp_path), "BIDIRECTIONAL_SEQUENCE_LSTM") == {
        "BIDIRECTIONAL_SEQUENCE_LSTM": 1
    }
    assert op_histogram(G)["UNIDIRECTIONAL_SEQUENCE_LSTM"] == 2
    assert op_histogram(fuse(G).graph) == op_histogram(fused)


def test_backward_output_read_as_is_gets_an_explicit_reverse(tmp_path):
    # the backward layer's own output (reversed in time) also a graph output
    G = load_model("tfkeras_bilstm_concat_seq")
    rev = next(op for _, op in ops_of(G) if op.kind == "REVERSE_V2")
    backward = next(op for _, op in ops_of(G) if op.inputs[0] == rev.outputs[0])
    G.graph["outputs"] = (*G.graph["outputs"], backward.outputs[0])
    r = fuse_and_compare(G, tmp_path)
    # the concat stays: the backward output has a second reader, the REVERSE_V2
    hist = op_histogram(r.graph)
    assert hist == {"BIDIRECTIONAL_SEQUENCE_LSTM": 1, "REVERSE_V2": 1, "CONCATENATION": 1}


def test_concatenation_backward_first_is_not_merged(tmp_path):
    # merge_outputs concatenates forward then backward, as Keras does; the other order stays
    G = load_model("tfkeras_bilstm_concat_seq")
    n = next(n for n, op in ops_of(G) if op.kind == "CONCATENATION")
    op = G.nodes[n]["op"]
    G.nodes[n]["op"] = dataclasses.replace(op, inputs=op.inputs[::-1])
    r = fuse_and_compare(G, tmp_path)
    assert op_histogram(r.graph) == {"BIDIRECTIONAL_SEQUENCE_LSTM": 1, "CONCATENATION": 1}


def test_pair_with_different_options_stays_two_lstms():
    G = load_model("tfkeras_bilstm_separate_seq")
    n = next(n for n, op in ops_of(G) if op.kind == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    op = G.nodes[n]["op"]
    G.nodes[n]["op"] = dataclasses.replace(op, options={**op.options, "cell_clip": 3.0})
    r = fuse(G)
    assert "bidirectional_lstm" not in r.counts
    assert op_histogram(r.graph)["UNIDIRECTIONAL_SEQUENCE_LSTM"] == 2


def test_bilstm_zoo_model_fuses_to_two_bidirectional_lstms(zoo_dir, tmp_path):
    # acceptance: no WHILE is left; Keras 3, two layers (sequence, then last step)
    G = rehydrate(read_tflite(zoo_dir / "keras__text_bilstm_float32.tflite"), seed=0)
    r = fuse_and_compare(G, tmp_path)
    assert kinds(r, "WHILE", "BIDIRECTIONAL_SEQUENCE_LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM") == {
        "WHILE": 0,
        "BIDIRECTIONAL_SEQUENCE_LSTM": 2,
        "UNIDIRECTIONAL_SEQUENCE_LSTM": 0,
    }
    assert r.graph.graph["subgraphs"] == {}


def test_tfkeras_bilstm_zoo_model_fuses_to_two_bidirectional_lstms(zoo_dir, tmp_path):
    G = rehydrate(read_tflite(zoo_dir / "keras__text_bilstm_tfkeras_float32.tflite"), seed=0)
    r = fuse_and_compare(G, tmp_path)
    assert kinds(
        r, "BIDIRECTIONAL_SEQUENCE_LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "REVERSE_V2"
    ) == {
        "BIDIRECTIONAL_SEQUENCE_LSTM": 2,
        "UNIDIRECTIONAL_SEQUENCE_LSTM": 0,
        "REVERSE_V2": 0,
    }


def test_gru_loop_is_not_mistaken_for_an_lstm(zoo_dir):
    r = fuse(read_tflite(zoo_dir / "keras__text_gru_float32.tflite"))
    assert "lstm" not in r.counts and op_histogram(r.graph)["WHILE"] == 1


@pytest.mark.parametrize("bad", ["trip", "start"])
def test_guards_keep_the_while(zoo_dir, bad):
    G = read_tflite(zoo_dir / "keras__text_lstm_float32.tflite")
    T = dict(G.graph["tensors"])
    W = G.nodes["while_5"]["op"]
    t = W.inputs[0]  # the iteration counter: its start, or the trip count of the condition
    if bad == "trip":
        cond = G.graph["subgraphs"][W.options["cond_subgraph"]]
        t = next(op for _, op in ops_of(cond) if op.kind == "LESS").inputs[1]
        T = dict(cond.graph["tensors"])
        T[t] = dataclasses.replace(T[t], buffer=Buffer.from_bytes(np.array(3, np.int32)))
        cond.graph["tensors"] = T
    else:
        T[t] = dataclasses.replace(T[t], buffer=Buffer.from_bytes(np.array(1, np.int32)))
        G.graph["tensors"] = T
        for _, _, k, d in G.edges(keys=True, data=True):
            d["tensor"] = T[k]
    assert "lstm" not in fuse(G).counts
