"""Draw a partitioned graph: DOT text with ops coloured by device, SVG through graphviz.

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> G = make_graph("g", [Tensor(n, (1, 8), "float32") for n in "xy"],
...                [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
>>> G.nodes["relu_0"].update(device="GPU", inference_type="FLOAT")
>>> 'fillcolor="#9fd49f"' in to_dot(G)
True
"""

from __future__ import annotations

import shutil
import subprocess

import networkx as nx

from tacopt.errors import printable
from tacopt.partitioner.targets import PartitionError

#: Fill colours of the built-in devices; other devices cycle through :data:`_SPARE`.
DEVICE_COLORS = {"CPU": "#a6c8ec", "GPU": "#9fd49f", "NNAPI": "#f3c48b", "NPU": "#d9a9e0"}
_SPARE = ("#f2e394", "#e8a0a0", "#b5e3e0", "#cccccc")


def quote(*parts: object) -> str:
    r"""One DOT quoted string of ``parts`` (lines of a label): the one way any text, names and
    labels alike, reaches the DOT file, so a name cannot close its string and add attributes.

    Backslashes are doubled (a name's ``\N`` or ``\l`` is not a DOT escape), quotes escaped,
    and characters a terminal or graphviz would act on (control characters, line separators)
    shown as Python escapes (:func:`tacopt.errors.printable`).

    >>> quote('a"; URL="javascript:x')
    '"a\\"; URL=\\"javascript:x"'
    >>> quote("CONV_2D", "conv_0")
    '"CONV_2D\\nconv_0"'
    """
    lines = (printable(part).replace("\\", "\\\\").replace('"', '\\"') for part in parts)
    return '"' + "\\n".join(lines) + '"'


def to_dot(G: nx.MultiDiGraph) -> str:
    """DOT text of ``G``: one box per op (kind, name, device/type), edges labelled by shape.

    Every string is quoted by :func:`quote`; node identifiers are ``op0``, ``op1``, ... so an op
    named like the legend (or like a DOT keyword) is still its own node.
    """
    devices = sorted({str(d.get("device", "?")) for _, d in G.nodes(data=True)})
    spare = iter(_SPARE * (len(devices) + 1))
    colors = {d: DEVICE_COLORS.get(d) or next(spare) for d in devices}
    ids = {n: f"op{i}" for i, n in enumerate(G.nodes)}
    lines = [
        f"digraph {quote(G.graph.get('name', 'model'))} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontsize=10];',
    ]
    for n, data in G.nodes(data=True):
        device = str(data.get("device", "?"))
        label = quote(data["op"].kind, n, f"{device}/{data.get('inference_type', '?')}")
        lines.append(f"  {ids[n]} [label={label}, fillcolor={quote(colors[device])}];")
    tensors = G.graph["tensors"]
    for u, v, k in G.edges(keys=True):
        shape = "x".join(str(d) for d in tensors[k].shape)
        lines.append(f"  {ids[u]} -> {ids[v]} [label={quote(shape)}, fontsize=8];")
    legend = quote("devices: " + " | ".join(devices))
    lines.append(f'  legend [shape=note, label={legend}, style=""];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def require_graphviz() -> str:
    """The path of graphviz ``dot``; :class:`PartitionError` when it is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        raise PartitionError("graphviz 'dot' is not installed; write DOT text with --dot instead")
    return dot


def to_svg(G: nx.MultiDiGraph) -> str:
    """SVG text rendered by graphviz ``dot``; :class:`PartitionError` when it is not installed."""
    dot = require_graphviz()
    done = subprocess.run(
        [dot, "-Tsvg"], input=to_dot(G), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise PartitionError(f"graphviz dot failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout
