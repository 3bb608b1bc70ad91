"""The cases of a fuzzing campaign: the source models, the byte-level mutations, and case
``index`` of campaign ``seed`` as a pure function of both (:mod:`tacopt.benchmarks.fuzz.models`
describes the families and runs the cases).

Examples
--------
>>> sources = load_sources()
>>> m = mutant(sources, seed=1, index=0)
>>> m.index, m.source in {s.name for s in sources}, len(m.data) > 8
(0, True, True)
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tacopt.benchmarks.fuzz.inplace import mutate_in_place
from tacopt.benchmarks.fuzz.objects import mutate_object
from tacopt.benchmarks.zoos import BUNDLED_DIR

ROOT = Path(__file__).resolve().parents[2]
ZOO_DIR = ROOT.parent / "shared" / "zoo"

#: Models small enough for object-API mutations (unpack + re-pack in a few ms).
OBJECT_API_MODELS = (
    "keras__text_lstm_float32.tflite",
    "keras__text_lstm_tfkeras_int8.tflite",
    "keras__text_transformer_float32.tflite",
)


@dataclass(frozen=True, slots=True)
class Source:
    """A model to mutate: its file name and bytes."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Mutant:
    """One mutated model: which case it is, what was done, and the bytes."""

    index: int
    source: str
    mutation: str
    data: bytes



def load_sources(zoo: Path | None = ZOO_DIR) -> list[Source]:
    """The bundled models, plus ``zoo``'s when that folder exists, sorted by name."""
    paths = sorted(BUNDLED_DIR.glob("*.tflite"))
    if zoo is not None and zoo.is_dir():
        bundled = {p.name for p in paths}
        paths += sorted(p for p in zoo.glob("*.tflite") if p.name not in bundled)
    return [Source(p.name, p.read_bytes()) for p in paths]


def mutate_bytes(source: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Bit flips, byte overwrites, a zeroed range or a truncation; returns (bytes, description)."""
    data = bytearray(source)
    n = len(data)
    how = rng.choice(["flip", "flip", "overwrite", "zero", "truncate"])
    if how == "flip":
        where = [rng.randrange(n) for _ in range(rng.randint(1, 8))]
        for pos in where:
            data[pos] ^= 1 << rng.randrange(8)
        return bytes(data), f"bytes flip {where}"
    if how == "overwrite":
        pos, payload = rng.randrange(n), rng.randbytes(rng.randint(1, 8))
        data[pos : pos + len(payload)] = payload
        return bytes(data[:n]), f"bytes overwrite @{pos} {payload.hex()}"
    if how == "zero":
        pos, k = rng.randrange(n), rng.choice([4, 16, 64, 256, 1024])
        data[pos : pos + k] = bytes(len(data[pos : pos + k]))
        return bytes(data), f"bytes zero [{pos}, {pos + k})"
    keep = rng.randrange(n)
    return bytes(data[:keep]), f"bytes truncate {keep}"


def mutant(sources: Sequence[Source], seed: int, index: int) -> Mutant:
    """Case ``index`` of the campaign ``seed``: a pure function of both (rebuild any case alone).

    Half the cases are in-place structure edits, a sixth object-API edits (on the small models of
    :data:`OBJECT_API_MODELS`; they cost ~20 ms each to re-pack), a third byte-level edits.
    """
    family, source, rng = pick_source(sources, seed, index)
    if family == "object":
        data, note = mutate_object(source.data, rng)
    else:
        mutate = mutate_in_place if family == "in-place" else mutate_bytes
        data, note = mutate(source.data, rng)
    return Mutant(index, source.name, note, data)


def pick_source(
    sources: Sequence[Source], seed: int, index: int
) -> tuple[str, Source, random.Random]:
    """The family and source model of case ``index`` (cheap: nothing is mutated yet), and the
    random generator that then drives the mutation. Half the cases use a bundled model."""
    rng = random.Random(f"{seed}:{index}")
    family = rng.choice(["in-place", "in-place", "in-place", "object", "bytes", "bytes"])
    small = [s for s in sources if s.name in OBJECT_API_MODELS]
    if family == "object" and small:
        return family, rng.choice(small), rng
    bundled = [s for s in sources if (BUNDLED_DIR / s.name).is_file()]
    pool = bundled if bundled and rng.random() < 0.5 else list(sources)
    return ("bytes" if family == "object" else family), rng.choice(pool), rng


def mutants(sources: Sequence[Source], seed: int, start: int, stop: int) -> Iterator[Mutant]:
    """Cases ``start`` to ``stop - 1`` of the campaign ``seed``."""
    for index in range(start, stop):
        yield mutant(sources, seed, index)
