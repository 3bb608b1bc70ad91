"""Command-line option values checked as argparse parses them: the ``type=`` functions every
``tacopt`` command shares, so that each rule (a count's floor, a time limit's range, a list's
names) is written once and a bad value is refused before any work, as one line and exit 2
(``tacopt bench: error: argument --jobs: must be at least 1, got 0``).

:func:`add_command` adds a sub-command whose words are the docstring of the function that
runs it; :func:`options_of` turns the parsed arguments into a command's frozen options record.

Examples
--------
>>> import argparse
>>> parser = argparse.ArgumentParser(prog="demo")
>>> _ = parser.add_argument("--jobs", type=at_least(1))
>>> _ = parser.add_argument("--time-limit", type=seconds)
>>> _ = parser.add_argument("--compare", type=names)
>>> vars(parser.parse_args(["--jobs", "2", "--time-limit", "1.5", "--compare", "exact, tac"]))
{'jobs': 2, 'time_limit': 1.5, 'compare': ('exact', 'tac')}
>>> at_least(1)("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be at least 1, got 0
>>> seconds("inf")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be positive and finite (seconds), got inf
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def at_least(least: int) -> Callable[[str], int]:
    """An option ``type=``: a whole number no smaller than ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value

    return parse


def positive(unit: str) -> Callable[[str], float]:
    """An option ``type=``: a positive, finite number of ``unit`` (a budget or a limit).

    >>> positive("minutes")("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be positive and finite (minutes), got 0
    """

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of {unit}: {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"must be positive and finite ({unit}), got {value:g}")
        return value

    return parse


#: A time limit: a positive, finite number of seconds.
seconds = positive("seconds")


def names(text: str) -> tuple[str, ...]:
    """An option ``type=``: comma-separated names, at least one, none empty, none twice.

    >>> names("exact,exact")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'exact' is listed twice in 'exact,exact'
    >>> names("exact,,tac")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: empty name in 'exact,,tac'
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("empty list")
    out = tuple(n.strip() for n in text.split(","))
    if "" in out:
        raise argparse.ArgumentTypeError(f"empty name in {text!r}")
    for i, name in enumerate(out):
        if name in out[:i]:
            raise argparse.ArgumentTypeError(f"{name!r} is listed twice in {text!r}")
    return out


def one_of(known: Callable[[], Iterable[str]], what: str) -> Callable[[str], str]:
    """An option ``type=``: one of the names ``known()`` lists (called while parsing, so that
    the table is imported only by the command that uses it).

    >>> one_of(lambda: ("xnnpack", "ref"), "op resolver")("gpu")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: unknown op resolver 'gpu' (known: xnnpack, ref)
    """

    def parse(text: str) -> str:
        choices = tuple(known())
        if text not in choices:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {text!r} (known: {', '.join(choices)})"
            )
        return text

    return parse


def names_of(known: Callable[[], Iterable[str]], what: str) -> Callable[[str], tuple[str, ...]]:
    """An option ``type=``: comma-separated names, each one of ``known()``, none twice; an empty
    text is no names (an option whose default is none).

    >>> parse = names_of(lambda: ("float32", "int8"), "type")
    >>> parse(""), parse("int8, float32")
    ((), ('int8', 'float32'))
    >>> parse("int4")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: unknown type 'int4' (known: float32, int8)
    """
    check = one_of(known, what)

    def parse(text: str) -> tuple[str, ...]:
        return tuple(check(name) for name in names(text)) if text.strip() else ()

    return parse


_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1e3, "kib": 2**10, "mb": 1e6, "mib": 2**20, "gb": 1e9,
               "gib": 2**30}  # fmt: skip


def capacities(text: str) -> dict[str, float]:
    """An option ``type=``: device capacities, ``"GPU=64MiB,NNAPI=8MiB"`` (units B, KB/KiB,
    MB/MiB, GB/GiB; none = B), as bytes by device; an empty text is none.

    >>> capacities("GPU=64MiB,NPU=1.5MB")
    {'GPU': 67108864.0, 'NPU': 1500000.0}
    >>> capacities("GPU=1MiB,GPU=2MiB")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: device 'GPU' given twice
    """
    out: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        device, _, size = item.partition("=")
        found = _SIZE.fullmatch(size)
        unit = found.group(2) if found else ""
        if not device.strip() or found is None or unit.lower() not in _SIZE_UNITS:
            raise argparse.ArgumentTypeError(
                f"{item!r} is not DEVICE=SIZE (e.g. GPU=64MiB; units: B, KB, KiB, MB, MiB, GB, GiB)"
            )
        if device.strip() in out:
            raise argparse.ArgumentTypeError(f"device {device.strip()!r} given twice")
        out[device.strip()] = float(found.group(1)) * _SIZE_UNITS[unit.lower()]
    return out


def output_file(text: str) -> Path:
    """An option ``type=``: where a file will be written; ``-`` is standard output, and a path
    ending in ``/`` names a folder, never a file (``pathlib`` would drop the slash).

    >>> output_file("plan.json"), output_file("-")
    (PosixPath('plan.json'), PosixPath('-'))
    >>> output_file("newdir/")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'newdir/' names a folder (it ends with '/'), not a file
    """
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{text!r} names a folder (it ends with '/'), not a file")
    return Path(text)


def options_of(cls: type[T], args: argparse.Namespace, **given: Any) -> T:
    """The frozen options record ``cls`` (a dataclass) of parsed ``args``: each field from the
    argument of its name (a list as a tuple, a mapping as its pairs), or from ``given``.

    >>> @dataclasses.dataclass(frozen=True)
    ... class Opts:
    ...     model: str
    ...     load: tuple[str, ...] = ()
    ...     time_limit_s: float | None = None
    >>> options_of(Opts, argparse.Namespace(model="m", load=["x.py"], time_limit=None),
    ...            time_limit_s=2.0)
    Opts(model='m', load=('x.py',), time_limit_s=2.0)
    """
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in given:
            values[f.name] = given[f.name]
        elif hasattr(args, f.name):
            value = getattr(args, f.name)
            if isinstance(value, list):
                value = tuple(value)
            elif isinstance(value, Mapping):
                value = tuple(value.items())
            values[f.name] = value
    return cls(**values)


def add_command(
    subparsers: Any, name: str, run: Callable[[argparse.Namespace], int], **kwargs: Any
) -> argparse.ArgumentParser:
    """Add the sub-command ``name``, carried out by ``run(args) -> exit code``, and return its
    parser: the one-line help is the first paragraph of ``run``'s docstring, the description
    the rest (so a command's words are written once, with the code that does it); ``kwargs``
    go to ``add_parser``.

    >>> def run_hello(args):
    ...     return 0
    >>> run_hello.__doc__ = "Say hello.\\n\\n    Print a greeting and exit 0.\\n    "
    >>> commands = argparse.ArgumentParser(prog="demo").add_subparsers()
    >>> p = add_command(commands, "hello", run_hello)
    >>> p.description, p.get_default("run") is run_hello
    ('Print a greeting and exit 0.', True)
    """
    summary, _, rest = inspect.cleandoc(run.__doc__ or name).partition("\n\n")
    summary = " ".join(summary.split()).removesuffix(".")
    if summary[1:2].islower():  # "Time every op" -> "time every op" (not an acronym's case)
        summary = summary[0].lower() + summary[1:]
    description = " ".join(rest.split()) or summary
    p = subparsers.add_parser(name, help=summary, description=description, **kwargs)
    p.set_defaults(run=run)
    return p
