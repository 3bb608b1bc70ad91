"""Seeded mutations of pick problems: hostile input for ``tacopt pick`` and its checker.

Each case starts from a small valid problem (the example of ``docs/pick-problem.md``, or a
synthetic layered DAG from :func:`tacopt.partitioner.problem.synthetic.layered_dag_problem` in its
JSON form) and applies one to three *mutators*: structure-aware ones edit the decoded JSON (drop,
rename or duplicate a field, a value of the wrong type, NaN / inf / -1 / 1e308 / 10**400,
dangling unit and tensor references, cycles, huge and deeply nested values, ...) and a final
byte-level one may edit the encoded text (truncation, bit flips, UTF-16, invalid UTF-8, a
TFLite header). Some mutators keep the problem valid (units out of order, keys shuffled, costs
scaled), so that the pickers run on odd but legal problems too.

Everything is a pure function of ``(seed, i)``: case ``i`` of a seed can be rebuilt alone
(:func:`mutated_problem`), which is what a resumable campaign needs. The suite's test
(``tests/partitioner/test_fuzz_problems.py``) runs a rotating sample through ``tacopt pick``;
``benchmarks/fuzz/campaign.py`` runs long campaigns.

Examples
--------
>>> cases = list(mutated_problems(seed=7, n=3))
>>> [name.split(":")[0] for name, _ in cases]
['7', '7', '7']
>>> cases == list(mutated_problems(seed=7, n=3))
True
>>> mutated_problem(7, 2) == cases[2]
True
"""

from __future__ import annotations

import codecs
import copy
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cache
from typing import Any

from tacopt.partitioner.problem import Link
from tacopt.partitioner.problem.synthetic import layered_dag_problem, two_choice_problem

# The example of docs/pick-problem.md (tests/partitioner/test_fuzz_problems.py checks that it
# still is): installed packages do not ship the docs.
DOC_EXAMPLE = """{
  "transfer": {"per_byte": 5.0, "fixed": 10.0},
  "quant": {"per_element": 2.0},
  "host": "CPU",
  "boundaries": true,
  "links": [{"from": "CPU", "to": "GPU", "per_byte": 2.0, "fixed": 50.0}],
  "units": [
    {"name": "func_0", "initial": "GPU/FLOAT",
     "choices": [{"device": "GPU", "type": "FLOAT", "cost": 40.0},
                 {"device": "CPU", "type": "FLOAT", "cost": 200.0}]},
    {"name": "func_1", "choices": [{"device": "CPU", "type": "QUANTIZED_INT8", "cost": 30.0}]},
    {"name": "func_2",
     "choices": [{"device": "GPU", "type": "FLOAT", "cost": 10.0},
                 {"device": "CPU", "type": "FLOAT", "cost": 90.0}]}
  ],
  "tensors": [
    {"name": "x",  "producer": null, "consumers": ["func_0"], "shape": [100], "dtype": "float32"},
    {"name": "t0", "producer": "func_0", "consumers": ["func_1", "func_2"], "shape": [100],
     "dtype": "float32"},
    {"name": "t1", "producer": "func_1", "consumers": ["func_2"], "shape": [100], "dtype": "int8"},
    {"name": "y",  "producer": "func_2", "consumers": [], "output": true, "shape": [2, 100],
     "dtype": "float32"}
  ]
}
"""

Json = Any
# A mutator edits a decoded problem in place (structure) or returns new bytes (encoding).
TreeMutator = Callable[[random.Random, dict[str, Any]], None]
ByteMutator = Callable[[random.Random, bytes], bytes]

# Values that stand for literals json.dumps cannot write (integers past Python's digit limit).
_LITERALS = {"@@10**400@@": "1" + "0" * 400, "@@10**5000@@": "1" + "0" * 5000,
             "@@-10**400@@": "-1" + "0" * 400, "@@1e400@@": "1e400"}  # fmt: skip

_DEEP = "@@deep:"

_SPECIAL_NUMBERS: tuple[Json, ...] = (
    float("nan"), float("inf"), float("-inf"), -1, -1e-9, 0, -0.0, 1e308, -1e308, 5e-324,
    2**63, 2**64, 10**18, 1e18, 1.0000001e18, 1e17, 1e19, 1e20, 3.5, True, False,
    *_LITERALS,
)  # fmt: skip
_ODD_STRINGS = ("", " ", "GPU", "CPU", "TPU", "FLOAT", "func_0", "x", "float32", "int8",
                "a\nb", "\t", "\u00e9\u00e8", "\ud800", "\x00", "GPU/FLOAT", "nan", "1e308",
                "é" * 3, "\u202e", "x" * 10_000)  # fmt: skip


@cache
def base_problems() -> tuple[tuple[str, str], ...]:
    """The valid problems mutations start from, as (name, JSON text)."""
    # Source-dependent link prices: the exact model's "extra" variables.
    links = {("CPU", "GPU"): Link(0.002, 30.0), ("GPU", "CPU"): Link(0.004, 30.0)}
    synthetic = {
        "dag6": layered_dag_problem(6, seed=0),
        "dag12": layered_dag_problem(12, seed=1),
        "dag25-inner": layered_dag_problem(25, seed=2, boundaries=False),
        "twochoice8": two_choice_problem(8, seed=3),
        "links10": replace(layered_dag_problem(10, seed=4, devices=("CPU", "GPU")), links=links),
    }
    bases = [("doc", DOC_EXAMPLE)]
    bases += [(name, json.dumps(p.to_dict(), indent=1)) for name, p in synthetic.items()]
    return tuple(bases)


def mutated_problems(seed: int, n: int) -> Iterator[tuple[str, bytes]]:
    """``n`` mutated pick problems as (name, file bytes), cases 0 to n - 1 of ``seed``.

    Case ``i`` is ``mutated_problem(seed, i)``. The name says how it was made:
    ``"seed:i:base:mutator+mutator"``.
    """
    for i in range(n):
        yield mutated_problem(seed, i)


def mutated_problem(seed: int, i: int) -> tuple[str, bytes]:
    """Case ``i`` of ``seed``: a base problem with one to three mutations, as (name, bytes)."""
    rng = random.Random(f"tacopt-fuzz-problems/{seed}/{i}")
    base_name, text = rng.choice(base_problems())
    data = json.loads(text)
    steps = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        name, mutate = rng.choice(TREE_MUTATORS)
        mutate(rng, data)
        steps.append(name)
    if rng.random() < 0.03:  # the whole document another JSON value
        data = rng.choice(([], None, 0, "problem", [data], {"problem": data}, {}))
        steps.append("replace_top")
    raw = _encode(data, rng)
    if rng.random() < 0.2:
        name, byte_mutate = rng.choice(BYTE_MUTATORS)
        raw = byte_mutate(rng, raw)
        steps.append(name)
    return f"{seed}:{i}:{base_name}:{'+'.join(steps)}", raw


def _encode(data: Json, rng: random.Random) -> bytes:
    """JSON text with the markers written out; lone surrogates as (invalid) UTF-8 bytes."""
    text = json.dumps(data, indent=rng.choice((None, 1)), ensure_ascii=rng.random() < 0.5)
    for marker, literal in _LITERALS.items():
        text = text.replace(json.dumps(marker), literal)
    if _DEEP in text:  # json.dumps itself cannot write what it cannot read back
        text = re.sub(json.dumps(_DEEP)[:-1] + r"(\d+)@@\"", _deep_literal, text)
    return text.encode("utf-8", "surrogatepass")


def _deep_literal(match: re.Match[str]) -> str:
    depth = int(match.group(1))
    return "[" * depth + "1" + "]" * depth


# ---------------------------------------------------------------------------------------------
# Where to mutate: every container in the tree, with the path to it


def _containers(data: Json) -> list[Json]:
    """Every dict and list in ``data``, depth first (iterative: mutated trees may be deep)."""
    found, stack = [], [data]
    while stack:
        node = stack.pop()
        if isinstance(node, (dict, list)):
            found.append(node)
            stack.extend(node.values() if isinstance(node, dict) else node)
    return found


def _pick_slot(rng: random.Random, data: Json, want: Callable[[Json], bool] = lambda v: True):
    """A random (container, key) whose value satisfies ``want``, or None."""
    slots = [
        (c, k)
        for c in _containers(data)
        for k in (c.keys() if isinstance(c, dict) else range(len(c)))
        if want(c[k])
    ]
    return rng.choice(slots) if slots else None


def _units(data: Json) -> list[Json]:
    units = data.get("units") if isinstance(data, dict) else None
    return [u for u in units if isinstance(u, dict)] if isinstance(units, list) else []


def _tensors(data: Json) -> list[Json]:
    tensors = data.get("tensors") if isinstance(data, dict) else None
    return [t for t in tensors if isinstance(t, dict)] if isinstance(tensors, list) else []


def _links(data: Json) -> list[Json]:
    links = data.get("links") if isinstance(data, dict) else None
    return [link for link in links if isinstance(link, dict)] if isinstance(links, list) else []


def _choices(data: Json) -> list[Json]:
    return [c for u in _units(data) if isinstance(u.get("choices"), list)
            for c in u["choices"] if isinstance(c, dict)]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Structure-aware mutators


def drop_field(rng: random.Random, data: Json) -> None:
    slot = _pick_slot(rng, data)
    if slot is not None:
        container, key = slot
        del container[key]


def rename_field(rng: random.Random, data: Json) -> None:
    dicts = [c for c in _containers(data) if isinstance(c, dict) and c]
    if dicts:
        d = rng.choice(dicts)
        key = rng.choice(list(d))
        new = rng.choice((key[1:], key + "s", key[::-1], key.upper(), key[:1] + key, "tranfser"))
        d[new] = d.pop(key)


def duplicate_item(rng: random.Random, data: Json) -> None:
    """A list element twice: a unit, a tensor, a choice, a consumer, a link, a dimension."""
    lists = [c for c in _containers(data) if isinstance(c, list) and c]
    if lists:
        items = rng.choice(lists)
        at = rng.randrange(len(items))
        items.insert(rng.randrange(len(items) + 1), copy.deepcopy(items[at]))


def wrong_type(rng: random.Random, data: Json) -> None:
    slot = _pick_slot(rng, data)
    if slot is not None:
        container, key = slot
        container[key] = rng.choice(
            (
                None,
                True,
                0,
                1.5,
                "1",
                "",
                [],
                {},
                [1, 2],
                {"a": 1},
                [[[]]],
                rng.choice(_ODD_STRINGS),
            )
        )


def special_number(rng: random.Random, data: Json) -> None:
    """A number (cost, price, shape entry, ...) set to NaN, inf, -1, 1e308, 10**400, ..."""
    slot = _pick_slot(rng, data, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
    if slot is not None:
        container, key = slot
        container[key] = rng.choice(_SPECIAL_NUMBERS)


def extreme_prices(rng: random.Random, data: Json) -> None:
    """Every cost, or one price, near or past the largest total a problem may reach."""
    value = rng.choice((1e15, 1e16, 1e17, 9.9e17, 1e18, 2e18, 1e300, 1e308))
    where = rng.choice(("costs", "per_byte", "fixed", "quant", "links"))
    if where == "costs":
        for c in _choices(data):
            c["cost"] = value
    elif where == "quant":
        data["quant"] = {"per_element": value}
    elif where == "links":
        for link in _links(data) or [{"from": "CPU", "to": "GPU", "per_byte": 1, "fixed": 1}]:
            link[rng.choice(("per_byte", "fixed"))] = value
    elif isinstance(data.get("transfer"), dict):
        data["transfer"][where] = value


def scale_costs(rng: random.Random, data: Json) -> None:
    """All costs and prices times 10**k: legal while totals stay under the limit."""
    factor = 10.0 ** rng.randint(-12, 16)
    for c in _choices(data):
        if isinstance(c.get("cost"), (int, float)):
            c["cost"] *= factor
    for price in [data.get("transfer"), data.get("quant"), *_links(data)]:
        if isinstance(price, dict):
            for key in ("per_byte", "fixed", "per_element"):
                if isinstance(price.get(key), (int, float)):
                    price[key] *= factor


def dangling_reference(rng: random.Random, data: Json) -> None:
    """A producer, consumer or ``initial`` naming a unit or choice that does not exist."""
    tensors, units = _tensors(data), _units(data)
    kind = rng.choice(("producer", "consumer", "initial", "drop-unit"))
    if kind == "initial" and units:
        rng.choice(units)["initial"] = rng.choice(("NPU/FLOAT", "GPU", "CPU/HYBRID", "/"))
    elif kind == "drop-unit" and units:
        data["units"].remove(rng.choice(units))
    elif tensors:
        t = rng.choice(tensors)
        if kind == "producer":
            t["producer"] = rng.choice(("ghost", "", "func_99999"))
        elif isinstance(t.get("consumers"), list):
            t["consumers"].append(rng.choice(("ghost", "func_99999", "x")))


def cycle(rng: random.Random, data: Json) -> None:
    """A tensor from a later unit back to an earlier one, or a unit reading its own output."""
    names = [u["name"] for u in _units(data) if isinstance(u.get("name"), str)]
    if not names or not isinstance(data.get("tensors"), list):
        return
    if len(names) < 2 or rng.random() < 0.3:
        a = b = rng.randrange(len(names))
    else:
        b, a = sorted(rng.sample(range(len(names)), 2))
    data["tensors"].append(
        {"name": f"back{rng.randrange(1000)}", "producer": names[a], "consumers": [names[b]],
         "shape": [4], "dtype": "float32"}
    )  # fmt: skip


def odd_structure(rng: random.Random, data: Json) -> None:
    """Legal oddities: units out of order, an output graph input, empty shapes, new devices."""
    units, tensors = _units(data), _tensors(data)
    kind = rng.choice(("shuffle", "output-input", "scalar", "zero", "device", "host", "flags"))
    if kind == "shuffle" and isinstance(data.get("units"), list):
        rng.shuffle(data["units"])
    elif kind == "output-input" and tensors:
        t = rng.choice(tensors)
        t["producer"], t["output"] = None, True
    elif kind in ("scalar", "zero") and tensors:
        rng.choice(tensors)["shape"] = [] if kind == "scalar" else [0, 7]
    elif kind == "device" and units and isinstance(units[0].get("choices"), list):
        device = rng.choice(("NPU", "DSP", "é", "x" * 300))
        units[0]["choices"].append({"device": device, "type": "HYBRID", "cost": 1.0})
    elif kind == "host":
        data["host"] = rng.choice(("GPU", "NPU", "TPU", "", "cpu"))
    else:
        data["boundaries"] = not data.get("boundaries", True)
        data["cost_unit"] = rng.choice(("us", "tac", "ms", "", 5))


def huge_value(rng: random.Random, data: Json) -> None:
    """Big shapes, long names, many dimensions, many consumers."""
    tensors, units = _tensors(data), _units(data)
    kind = rng.choice(("shape", "dims", "name", "consumers", "choices"))
    if kind == "shape" and tensors:
        rng.choice(tensors)["shape"] = rng.choice(
            ([2**31 - 1] * 4, [2**62], [2**63], [2**62, 4], [10**6] * 3, ["@@10**400@@"])
        )
    elif kind == "dims" and tensors:
        rng.choice(tensors)["shape"] = [2] * rng.choice((64, 1000, 20_000))
    elif kind == "name" and units:
        rng.choice(units)["name"] = "u" * rng.choice((1000, 1_000_000))
    elif kind == "consumers" and tensors and units:
        # Not more: the tac picker takes time quadratic in a unit's operands (50,000 take hours).
        t = rng.choice(tensors)
        if isinstance(units[-1].get("name"), str):
            t["consumers"] = [units[-1]["name"]] * 300
    elif units and isinstance(units[0].get("choices"), list):
        units[0]["choices"] = [
            {"device": f"D{k}", "type": "FLOAT", "cost": float(k)} for k in range(300)
        ]


def deep_nesting(rng: random.Random, data: Json) -> None:
    """A value nested 5 to 100,000 arrays deep (a marker, written out by _encode)."""
    slot = _pick_slot(rng, data)
    if slot is not None:
        container, key = slot
        container[key] = f"{_DEEP}{rng.choice((5, 50, 999, 1000, 5000, 100_000))}@@"


def bad_text(rng: random.Random, data: Json) -> None:
    """A name with a control character, a lone surrogate, a bidi override or a NUL."""
    slot = _pick_slot(rng, data, lambda v: isinstance(v, str))
    if slot is not None:
        container, key = slot
        container[key] = container[key] + rng.choice(("\n", "\x00", "\ud800", "\u202e", "\x85"))


TREE_MUTATORS: tuple[tuple[str, TreeMutator], ...] = (
    ("drop_field", drop_field),
    ("rename_field", rename_field),
    ("duplicate_item", duplicate_item),
    ("wrong_type", wrong_type),
    ("special_number", special_number),
    ("special_number", special_number),
    ("extreme_prices", extreme_prices),
    ("scale_costs", scale_costs),
    ("dangling_reference", dangling_reference),
    ("cycle", cycle),
    ("odd_structure", odd_structure),
    ("odd_structure", odd_structure),
    ("huge_value", huge_value),
    ("deep_nesting", deep_nesting),
    ("bad_text", bad_text),
)


# ---------------------------------------------------------------------------------------------
# Byte-level mutators


def truncate(rng: random.Random, raw: bytes) -> bytes:
    return raw[: rng.randrange(len(raw) + 1)]


def flip_bits(rng: random.Random, raw: bytes) -> bytes:
    out = bytearray(raw)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def splice(rng: random.Random, raw: bytes) -> bytes:
    """Insert junk, delete a range or repeat a range."""
    a = rng.randrange(len(raw) + 1)
    b = min(len(raw), a + rng.randint(1, 64))
    junk = rng.choice((b"\xff\xfe", b"\x00", b"{", b"]", b"\xc3", b"\xed\xa0\x80", b"NaN", b",,"))
    return rng.choice((raw[:a] + junk + raw[a:], raw[:a] + raw[b:], raw[:b] + raw[a:]))


def reencode(rng: random.Random, raw: bytes) -> bytes:
    """The same text as UTF-16 or UTF-32 (with or without BOM), Latin-1, or with a UTF-8 BOM."""
    text = raw.decode("utf-8", "surrogatepass")
    kind = rng.choice(("utf-16", "utf-16-le", "utf-32", "latin-1", "bom"))
    if kind == "bom":
        return codecs.BOM_UTF8 + raw
    return (text + "\u00e9").encode(kind, "replace")


def other_file(rng: random.Random, raw: bytes) -> bytes:
    """Not a problem at all: empty, whitespace, a TFLite header, random bytes, bare values."""
    return rng.choice((
        b"", b"   \n", b"\x1c\x00\x00\x00TFL3" + bytes(rng.randrange(256) for _ in range(64)),
        bytes(rng.randrange(256) for _ in range(256)), b"null", b"[]", b"{}", b"1e999",
        b'"' + b"a" * 1000, b"[" * 200_000, b"{\"units\":" * 50_000,
    ))  # fmt: skip


BYTE_MUTATORS: tuple[tuple[str, ByteMutator], ...] = (
    ("truncate", truncate),
    ("flip_bits", flip_bits),
    ("splice", splice),
    ("reencode", reencode),
    ("other_file", other_file),
)
