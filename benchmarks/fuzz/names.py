"""Hostile names for fuzzing what tacopt renders: pages, DOT and the terminal.

A model's tensor, subgraph, signature and custom-op names (and its file's stem) reach the plan
page's HTML and embedded JSON, the ``--dot`` text and the terminal. :func:`hostile_names` draws
them from :data:`HOSTILE` (markup that would run script or add DOT attributes, control
characters, line separators, bidirectional controls) mixed with random characters;
:func:`hostile_graph` puts them into a small model that every device can take; the checkers
(:func:`page_problems`, :func:`dot_problems`, :func:`terminal_problems`) say what in a rendered
output is unsafe.

Examples
--------
>>> import random
>>> from tacopt.partitioner.draw import to_dot
>>> names = hostile_names(random.Random(1), 12)
>>> G = hostile_graph(names)
>>> sorted(G.graph["tensors"]) == sorted(set(names[:4]))
True
>>> dot_problems(to_dot(G))
[]
"""

from __future__ import annotations

import json
import random
import re
from html.parser import HTMLParser

import networkx as nx

from tacopt.errors import printable
from tacopt.fusion.ir import Op, Tensor, make_graph
from tacopt.fusion.ir.records import ModelInfo, SignatureDef

#: Names that broke, or could break, a rendered output (the issue's reproducers among them).
HOSTILE = (
    "<!--<script",
    "</script><script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "<svg onload=alert(3)>",
    "${alert(4)}`",
    'q"; URL="javascript:alert(5)"; image="/etc/passwd',
    "javascript:alert(6)",
    "' onmouseover='alert(7)",
    "&lt;&amp;&#60;",
    "a\u2028b\u2029c",
    "\x1b[2J\x1b]0;title\x07\rEVIL",
    "\u202eevil\u2066",
    "]]><![CDATA[",
    "\\N\\G\\l\\",
    "legend",
    "node",
    "}; digraph x {",
)

#: Characters mixed into random names: markup, quotes, escapes, controls, separators.
_ALPHABET = '<>&"\'`/\\!-=;{}[]() \t\n\r\x00\x07\x1b\x7f\x85\u2028\u2029\u202e\u2066é漢🙂az09_'


def hostile_names(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct names, each a hostile one, a random one, or both joined."""
    names: list[str] = []
    while len(names) < n:
        how = rng.random()
        random_part = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 24)))
        if how < 0.4:
            name = rng.choice(HOSTILE)
        elif how < 0.7:
            name = random_part
        else:
            name = rng.choice(HOSTILE) + random_part
        name = name.replace("\x00", "")  # a flatbuffer string may hold NUL; a file name may not
        if name and name not in names:
            names.append(name)
    return names


def hostile_graph(names: list[str]) -> nx.MultiDiGraph:
    """A three-op model (RELU, a custom op, TANH) named from ``names`` (at least 12, the first
    four distinct): four tensors, two op names, a custom code, the subgraph, a signature and
    its input and output names.

    ::

        x -> RELU -> a -> CUSTOM:<names[6]> -> b -> TANH -> c
    """
    x, a, b, c = names[:4]
    tensors = [Tensor(t, (1, 8), "float32") for t in (x, a, b, c)]
    ops = [
        Op(names[4], "RELU", (x,), (a,)),
        Op(names[5], "CUSTOM:" + names[6], (a,), (b,)),
        Op(names[7], "TANH", (b,), (c,)),
    ]
    signature = SignatureDef(names[9], names[8], ((names[10], x),), ((names[11], c),))
    model = ModelInfo(signature_defs=(signature,))
    return make_graph(names[8], tensors, ops, [x], [c], model=model)


class _Scripts(HTMLParser):
    """The elements and the text of each ``<script>`` element, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False if tag == "script" else self._in_script

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def page_problems(html: str, data: dict | None = None) -> list[str]:
    """What is unsafe in a plan page: an element tacopt does not write, a script other than the
    page's two, JSON data with a raw ``<``, ``>`` or ``&``, or data that does not read back (as
    ``data``, when given)."""
    parser = _Scripts()
    parser.feed(html)
    problems = []
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    if len(scripts) != 2 or len(parser.scripts) != 2:
        problems.append(f"{len(scripts)} script elements, not 2")
    if any(tag in ("img", "iframe", "object", "embed", "link", "base", "meta") and
           attrs.get("charset") is None for tag, attrs in parser.tags):  # fmt: skip
        problems.append("an element from a name reached the HTML")
    if parser.scripts:
        payload = parser.scripts[0]
        if re.search("[<>&\u2028\u2029]", payload):
            problems.append("raw <, >, & or a line separator in the embedded JSON")
        try:
            read = json.loads(payload)
            if data is not None and read != json.loads(json.dumps(data)):
                problems.append("the embedded JSON does not read back as the page's data")
        except ValueError as exc:
            problems.append(f"the embedded JSON is broken: {exc}")
    return problems


#: One line of :func:`tacopt.partitioner.draw.to_dot`: identifiers are tacopt's, strings quoted.
_STRING = r'"(?:[^"\\\n]|\\.)*"'
_DOT_LINE = re.compile(
    rf"digraph {_STRING} {{|  rankdir=TB;|"
    r'  node \[shape=box, style="rounded,filled", fontsize=10\];|'
    rf"  op\d+ \[label={_STRING}, fillcolor={_STRING}\];|"
    rf"  op\d+ -> op\d+ \[label={_STRING}, fontsize=8\];|"
    rf'  legend \[shape=note, label={_STRING}, style=""\];|}}'
)


def dot_problems(text: str) -> list[str]:
    """Lines of DOT text that are not one of the shapes tacopt writes (a name that closed its
    string and added attributes, or broke the line), and unprintable characters."""
    problems = [f"line {i + 1}: {line[:80]!r}" for i, line in enumerate(text.splitlines())
                if not _DOT_LINE.fullmatch(line)]  # fmt: skip
    return problems + terminal_problems(text.replace("\n", ""))


def terminal_problems(text: str) -> list[str]:
    """Characters in ``text`` that a terminal would act on (escapes, BEL, CR, separators)."""
    bad = sorted({c for c in text if printable(c) != c and c != "\n"})
    return [f"unprintable {c!r} on the terminal" for c in bad]


__all__ = [
    "HOSTILE", "dot_problems", "hostile_graph", "hostile_names", "page_problems",
    "terminal_problems",
]  # fmt: skip
