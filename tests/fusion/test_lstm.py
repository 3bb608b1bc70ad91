"""The Keras-3 LSTM loop fusion on the real zoo models, checked in ai-edge-litert."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tacopt.fusion.executor import random_inputs, run_graph
from tacopt.fusion.fuse import fuse, op_histogram
from tacopt.fusion.ir import Buffer, ops_of, validate_graph
from tacopt.fusion.reader import read_tflite
from tacopt.fusion.rehydrate import rehydrate
from tacopt.fusion.writer import write_tflite


def _zero_initial_states(G):
    """Rehydration fills the loops' dropped zero initial states randomly; Keras emits zeros."""
    T = dict(G.graph["tensors"])
    for _, op in ops_of(G):
        if op.kind == "WHILE":
            for t in op.inputs[3:5]:
                T[t] = dataclasses.replace(
                    T[t], buffer=Buffer.from_bytes(np.zeros(T[t].shape, np.float32))
                )
    G.graph["tensors"] = T
    for _, _, k, d in G.edges(keys=True, data=True):
        d["tensor"] = T[k]
    return G


def _litert(path, inputs):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], inputs[d["name"]])
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}


def test_text_lstm_fuses_to_one_unidirectional_lstm_equal_to_while(zoo_dir, tmp_path):
    G = _zero_initial_states(
        rehydrate(read_tflite(zoo_dir / "keras__text_lstm_float32.tflite"), seed=0)
    )
    validate_graph(G)
    r = fuse(G)
    validate_graph(r.graph)
    hist = op_histogram(r.graph)
    assert hist["UNIDIRECTIONAL_SEQUENCE_LSTM"] == 1 and "WHILE" not in hist
    assert r.graph.graph["subgraphs"] == {}
    lstm = next(op for _, op in ops_of(r.graph) if op.kind == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    assert len(lstm.origin) == 1 and lstm.options["time_major"] is True
    inputs = random_inputs(G, seed=1)
    want = _litert(write_tflite(G, tmp_path / "while.tflite"), inputs)
    got = _litert(write_tflite(r.graph, tmp_path / "fused.tflite"), inputs)
    ref = run_graph(r.graph, inputs)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=0, atol=1e-5)
        np.testing.assert_allclose(ref[k], want[k], rtol=0, atol=1e-5)


def test_bilstm_last_step_layers_fuse_and_others_keep_their_while(zoo_dir):
    r = fuse(read_tflite(zoo_dir / "keras__text_bilstm_float32.tflite"))
    validate_graph(r.graph)
    hist = op_histogram(r.graph)
    # the two return_sequences=False layers fuse; the two sequence layers keep their loops
    assert (hist["UNIDIRECTIONAL_SEQUENCE_LSTM"], hist["WHILE"]) == (2, 2)
    assert len(r.graph.graph["subgraphs"]) == 4


def test_gru_loop_is_not_mistaken_for_an_lstm(zoo_dir):
    r = fuse(read_tflite(zoo_dir / "keras__text_gru_float32.tflite"))
    assert "lstm" not in r.counts and op_histogram(r.graph)["WHILE"] == 1


@pytest.mark.parametrize("bad", ["trip", "state"])
def test_guards_keep_the_while(zoo_dir, bad):
    G = read_tflite(zoo_dir / "keras__text_lstm_float32.tflite")
    T = dict(G.graph["tensors"])
    W = G.nodes["while_5"]["op"]
    t = W.inputs[0] if bad == "trip" else W.inputs[3]
    value = np.array(3, np.int32) if bad == "trip" else np.ones(T[t].shape, np.float32)
    T[t] = dataclasses.replace(T[t], buffer=Buffer.from_bytes(value))
    G.graph["tensors"] = T
    for _, _, k, d in G.edges(keys=True, data=True):
        d["tensor"] = T[k]
    assert "lstm" not in fuse(G).counts
