"""What kind of file a file is, from its first bytes: so that no output replaces a file of
another kind (``tacopt pick p.json --plan model.tflite`` must not turn a model into a plan).

An output may replace an existing file only when both are of one kind (:func:`file_format`):
a plan over an older plan, a page over an older page. A file of another kind (a model, an
image, the user's notes) is refused with one line; an empty file may always be replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

from tacopt.errors import OutputError

#: How many leading bytes decide a file's kind.
HEAD_BYTES = 512

#: The kinds an empty output may replace (a run that had nothing to write: its earlier text).
_TEXTS = ("JSON", "text")

#: Binary formats by their magic bytes: (offset, magic, kind).
_MAGIC = (
    (4, b"TFL3", "a .tflite model"),
    (0, b"\x1f\x8b", "gzip data"),
    (0, b"\x89PNG", "a PNG image"),
    (0, b"PK\x03\x04", "a zip archive"),
    (0, b"%PDF", "a PDF document"),
    (0, b"\x7fELF", "a program"),
)


def file_format(head: bytes) -> str:
    """The kind of a file whose first bytes are ``head``, as a phrase for messages.

    >>> file_format(b'{"picker": "exact"}'), file_format(b"  [1, 2]")
    ('JSON', 'JSON')
    >>> file_format(b"\\x1c\\x00\\x00\\x00TFL3\\x00\\x00"), file_format(b"\\x1f\\x8b\\x08")
    ('a .tflite model', 'gzip data')
    >>> file_format(b"<!DOCTYPE html><html>"), file_format(b"<?xml version='1.0'?><svg")
    ('an HTML page', 'XML or SVG')
    >>> file_format(b"digraph plan {"), file_format(b"| picker | cases |")
    ('a DOT graph', 'text')
    >>> file_format(b""), file_format(b"\\x00\\x01\\x02")
    ('empty', 'binary data')
    """
    if not head:
        return "empty"
    for offset, magic, kind in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return kind
    if b"\x00" in head:
        return "binary data"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not a character cut at the end of the head
            return "binary data"
        text = head[: exc.start].decode("utf-8")
    text = text.lstrip("\ufeff \t\r\n").lower()
    if text.startswith(("{", "[")):
        return "JSON"
    if text.startswith(("<!doctype html", "<html")):
        return "an HTML page"
    if text.startswith(("<?xml", "<svg")):
        return "XML or SVG"
    if text.startswith(("digraph", "strict digraph", "graph", "strict graph")):
        return "a DOT graph"
    return "text"


def read_head(path: str | os.PathLike[str]) -> bytes | None:
    """The first :data:`HEAD_BYTES` of ``path``; None when it cannot be read (missing included)."""
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError:
        return None


def check_replace(final: Path, new: str, *, what: str) -> None:
    """Refuse to replace ``final`` with a file of kind ``new`` (:func:`file_format`) when
    ``final`` is a non-empty file of another kind; nothing is refused when it is absent.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "m.tflite").write_bytes(b"\\x1c\\x00\\x00\\x00TFL3")
    8
    >>> check_replace(d / "m.tflite", "JSON", what="--plan")
    Traceback (most recent call last):
    ...
    tacopt.errors.OutputError: --plan: '...m.tflite' is a .tflite model, and this writes JSON; ...
    >>> check_replace(d / "new.json", "JSON", what="--plan")  # absent: fine
    """
    old_head = read_head(final)
    if not old_head:
        return
    old = file_format(old_head)
    if old != new and not (new == "empty" and old in _TEXTS):
        raise OutputError(
            f"{what}: '{final}' is {old}, and this writes {new}; refusing to replace it "
            "(remove it or choose another path)"
        )


def json_file_kind(path: str | os.PathLike[str]) -> str:
    """The kind of a JSON file tacopt writes at ``path``: gzipped when the name ends in ``.gz``.

    >>> json_file_kind("m.json.gz"), json_file_kind("plan.json")
    ('gzip data', 'JSON')
    """
    return "gzip data" if os.fspath(path).endswith(".gz") else "JSON"
