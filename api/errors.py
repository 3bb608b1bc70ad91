"""The project's exception types.

Every error a user can cause (a broken file, an unknown device, a malformed problem, NaN costs)
is a :class:`TacoptError` whose message is one line naming what went wrong and where. The CLI
prints that line (:func:`print_error`, the one place that does) and exits with code 2
(:data:`EXIT_BAD_INPUT`); anything else is a bug in tacopt.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
from collections.abc import Callable
from typing import NoReturn

#: The exit code of every bad input: a :class:`TacoptError`, or a command line that is refused.
EXIT_BAD_INPUT = 2
#: The exit code of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130

#: Characters a terminal would act on instead of showing: control characters (ESC, BEL, CR, ...),
#: Unicode line separators, and the bidirectional controls that reorder what is shown.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNPRINTABLE_BUT_NEWLINE = re.compile(
    r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def printable(text: object, *, keep_newlines: bool = False) -> str:
    r"""``text`` safe to show on a terminal: the one escape every string from a model, a problem
    or a cost-model file passes through before it is printed. Control characters (ESC, BEL, CR),
    line separators and bidirectional controls are shown as Python escapes, and text that cannot
    be written as UTF-8 (a lone surrogate) as backslash escapes. ``keep_newlines`` keeps ``\n``
    (for a whole report whose lines tacopt wrote).

    >>> printable("relu\x1b[2J\x07\r")
    'relu\\x1b[2J\\x07\\r'
    >>> printable("a\nb"), printable("a\nb", keep_newlines=True)
    ('a\\nb', 'a\nb')
    """
    pattern = _UNPRINTABLE_BUT_NEWLINE if keep_newlines else _UNPRINTABLE
    escaped = pattern.sub(lambda m: repr(m.group())[1:-1], str(text))
    return escaped.encode("utf-8", "backslashreplace").decode("utf-8")


def one_line(message: object) -> str:
    """``message`` as one printable line (:func:`printable`): control characters and line
    breaks (a mutated tensor name may hold any) are shown escaped.

    >>> one_line("tensor 'a\\nb' is bad")
    "tensor 'a\\\\nb' is bad"
    """
    return printable(message)


def print_error(prog: str, message: object) -> int:
    """Report bad input the way every tacopt command does: ``PROG: error: MESSAGE`` as one line
    on stderr; returns :data:`EXIT_BAD_INPUT` for the caller to exit with.

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     code = print_error("tacopt pick", "bad file")
    >>> code, err.getvalue().strip()
    (2, 'tacopt pick: error: bad file')
    """
    print(one_line(f"{prog}: error: {message}"), file=sys.stderr)
    return EXIT_BAD_INPUT


class TacoptError(Exception):
    """Base class of every error tacopt raises on bad input."""


class ModelFormatError(TacoptError):
    """A .tflite file (or buffer) that cannot be read: missing, truncated, corrupt, out of range."""


class GraphError(TacoptError):
    """A graph that breaks an IR invariant checked by :func:`tacopt.fusion.ir.validate_graph`."""


class FusionError(TacoptError):
    """A composite whose signature does not verify, or a fusion registry misuse."""


class ExecutionError(TacoptError):
    """A graph that LiteRT (:mod:`tacopt.fusion.tflite.litert`) or a custom op's kernel cannot
    run."""


class OutputError(TacoptError):
    """An output path that cannot be written: a folder, a missing parent, no permission."""


class ResourceLimitError(TacoptError):
    """An input that would need more memory than a documented, overridable cap allows."""


def run_as_program(main: Callable[[], int]) -> NoReturn:
    """Run a command's ``main()`` as the program (``python -m ...``) and exit with its code.

    An interrupted command exits 130 (after its one line): under ``python -m``, CPython ends a
    process by SIGINT, after its exit handlers, whenever a KeyboardInterrupt once passed through
    code an extension ran with ``PyRun_String`` (pybind11's ``py::exec`` when OR-Tools loads),
    even though ``main`` caught it, and the exit status would be -2. So an exit handler
    registered first (it runs last, once threads are joined and every other handler has run)
    flushes the output and leaves with 130 through ``os._exit``.
    """
    code = [0]

    def leave_interrupted() -> None:
        if code[0] == EXIT_INTERRUPTED:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)

    atexit.register(leave_interrupted)
    code[0] = main()
    sys.exit(code[0])
