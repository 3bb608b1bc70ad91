"""DOT text of a partitioned graph: every string is quoted, so a name cannot add attributes."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from tacopt.benchmarks.fuzz.names import HOSTILE, dot_problems, hostile_graph, hostile_names
from tacopt.partitioner.draw import quote, to_dot


def _placed(G):
    for i, n in enumerate(G.nodes):
        G.nodes[n].update(device=HOSTILE[i % len(HOSTILE)], inference_type="FLOAT")
    return G


def test_a_custom_code_with_quotes_stays_inside_its_label():
    names = [f"t{i}" for i in range(12)]
    names[6] = 'q"; URL="javascript:alert(5)"; image="/etc/passwd'
    dot = to_dot(_placed(hostile_graph(names)))
    assert dot_problems(dot) == []
    assert 'URL="' not in dot and 'image="' not in dot


def test_every_string_of_hostile_graphs_is_quoted():
    rng = random.Random(7)
    for _ in range(200):
        assert dot_problems(to_dot(_placed(hostile_graph(hostile_names(rng, 12))))) == []


def test_quote_doubles_backslashes_and_escapes_controls():
    assert quote("\\N") == '"\\\\N"'
    assert quote("a\x1b[2Jb") == '"a\\\\x1b[2Jb"'
    assert quote("a", "b") == '"a\\nb"'


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz is not installed")
def test_graphviz_reads_hostile_dot_as_three_ops_and_a_legend():
    dot = to_dot(_placed(hostile_graph(list(HOSTILE[:12]))))
    done = subprocess.run(["dot", "-Tplain"], input=dot, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    nodes = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("node ")]
    assert sorted(nodes) == ["legend", "op0", "op1", "op2"]
