"""Small file helpers shared by every package: outputs are checked first and written atomically.

A command with several outputs checks every path before it starts work
(:func:`check_output_path`), then writes them all or none (:func:`all_or_nothing`). Inputs in
JSON, plain or gzipped, are read by :func:`read_json` / :func:`decode_json` (bounded inflation,
one line naming the file when they are broken); JSON lines by :func:`read_json_lines`.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from tacopt.errors import OutputError, TacoptError
from tacopt.formats import HEAD_BYTES, check_replace, file_format, read_head


def atomic_write(path: str | os.PathLike[str], data: bytes | str, *, what: str = "output") -> Path:
    """Write ``data`` to ``path`` so that readers never see a half-written file.

    The bytes go to a temporary file in the same folder, which then replaces ``path``; on any
    error the temporary file is removed and ``path`` is left as it was, and an OSError (a full
    disk, a read-only filesystem, a name too long) is one :class:`OutputError` naming ``what``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> atomic_write(p, "hi").read_text()
    'hi'
    >>> oct(p.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    True
    """
    path = Path(path)
    payload = _encoded(data)
    check_replace(path, file_format(payload[:HEAD_BYTES]), what=what)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=_folder(path), prefix=_tmp_prefix(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; a normal file follows the umask
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            _unlink_quietly(Path(tmp))
        if isinstance(exc, OSError):
            raise OutputError(_write_failure(what, path, exc)) from None
        raise
    return path


def _encoded(data: bytes | str) -> bytes:
    # A lone surrogate (a name read from a hostile file) is written escaped, not a traceback.
    return data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data


def _folder(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def _tmp_prefix(path: Path) -> str:
    # Short, so a final name near the filesystem's limit still has a staging name that fits.
    return f".{path.name[:24]}."


def _unlink_quietly(path: Path) -> None:
    with suppress(OSError):
        path.unlink(missing_ok=True)


def _write_failure(what: str, path: Path | str, exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    return f"{what}: cannot write '{path}': {reason}"


#: The longest file name most filesystems take (bytes), when the folder cannot say.
NAME_MAX = 255


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` name one existing file (the same device and inode).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "a").write_text("x"); (d / "b").symlink_to(d / "a")
    1
    >>> same_file(d / "a", d / "b"), same_file(d / "a", d / "c")
    (True, False)
    """
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_output_path(
    path: str | os.PathLike[str],
    *,
    what: str = "output",
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    writes: str | None = None,
) -> Path:
    """``path`` as a :class:`~pathlib.Path` if a file can be written there, else one clear error.

    ``-`` is standard output and always passes. Otherwise the folder must exist and take a new
    file (tried by creating and removing one: permission bits say yes to root on ``/sys`` or
    ``/proc``), the name must fit, and an existing ``path`` must be a regular file (not a
    folder, device, FIFO or symlink) that is none of ``inputs`` (compared by device and inode).

    Parameters
    ----------
    path : path-like
        Where a file will be written (a string ending in ``/`` names a folder).
    what : str
        What the file is, for the message (``"--plan"``, ``"results file"``).
    inputs : iterable of path-like or None
        The files the command reads; writing over one of them is refused.
    writes : str, optional
        The kind of file the output will be (:func:`tacopt.formats.file_format`, e.g. ``"JSON"``):
        an existing file of another kind is refused now, before the work. Without it the same
        check runs when the output is written (:func:`atomic_write`, :func:`all_or_nothing`).

    Returns
    -------
    Path

    Raises
    ------
    OutputError
        ``path`` cannot or may not be written, for the reason said.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> check_output_path(d / "plan.json") == d / "plan.json"
    True
    >>> check_output_path(d, what="--plan")
    Traceback (most recent call last):
    ...
    tacopt.errors.OutputError: --plan: '...' is a folder, not a file
    >>> check_output_path(d / "nodir" / "p.json", what="--plan")
    Traceback (most recent call last):
    ...
    tacopt.errors.OutputError: --plan: folder '...nodir' does not exist
    >>> (d / "m.tflite").write_bytes(b"x")
    1
    >>> check_output_path(d / "m.tflite", what="-o", inputs=[d / "m.tflite"])
    Traceback (most recent call last):
    ...
    tacopt.errors.OutputError: -o: '...m.tflite' is an input of this command; refusing ...
    """
    if is_stdout(path):
        return Path("-")
    text = os.fspath(path)
    path = Path(path)
    if text == "" or text.endswith(("/", os.sep)) or _is_dir(path):
        raise OutputError(f"{what}: {text!r} is a folder, not a file")
    parent = _folder(path)
    if not _is_dir(parent):
        if os.path.lexists(parent):
            raise OutputError(f"{what}: '{parent}' is not a folder")
        raise OutputError(f"{what}: folder '{parent}' does not exist")
    name_bytes = len(os.fsencode(path.name))
    if name_bytes > _name_max(parent):
        raise OutputError(f"{what}: file name too long ({name_bytes} bytes): '{path}'")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(_write_failure(what, path, exc)) from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise OutputError(f"{what}: '{path}' is a symbolic link; refusing to replace it")
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{what}: '{path}' exists and is not a regular file ({_kind(st)})")
        for source in inputs:
            if source is not None and not is_stdout(source) and same_file(source, path):
                raise OutputError(
                    f"{what}: '{path}' is an input of this command; refusing to overwrite it"
                )
        if writes is not None:
            check_replace(path, writes, what=what)
    _probe_folder(parent, what)
    return path


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    """Whether ``path`` is ``-`` (standard output)."""
    return path is not None and os.fspath(path) == "-"


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, a loop of links: not a folder
        return False


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return NAME_MAX


def _kind(st: os.stat_result) -> str:
    mode = st.st_mode
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):  # fmt: skip
        if test(mode):
            return name
    return "not a file"


def _probe_folder(folder: Path, what: str) -> None:
    """Create and remove a file in ``folder``: the one test that holds for root, read-only
    filesystems and pseudo-filesystems alike (``os.access`` says yes to root everywhere)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tacopt-probe.", suffix=".tmp")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OutputError(f"{what}: folder '{folder}' is not writable ({reason})") from None
    os.close(fd)
    _unlink_quietly(Path(tmp))


def check_output_folder(path: str | os.PathLike[str], *, what: str = "output folder") -> Path:
    """``path`` as a Path if it is a writable folder or can be created as one, else one error.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> check_output_folder(d / "new" / "deeper") == d / "new" / "deeper"
    True
    >>> (d / "f").write_text("x")
    1
    >>> check_output_folder(d / "f", what="--out")
    Traceback (most recent call last):
    ...
    tacopt.errors.OutputError: --out: '...f' is a file, not a folder
    """
    path = Path(path)
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        kind = "a file" if existing == path else f"under the file '{existing}'"
        raise OutputError(f"{what}: '{path}' is {kind}, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{what}: folder '{existing}' is not writable")
    return path


class Staging:
    """Temporary files beside each output, renamed into place together by :func:`all_or_nothing`.

    ``-`` (standard output) is staged in the system's temporary folder and copied to stdout
    when the outputs are committed.
    """

    def __init__(self, names: dict[Path, str] | None = None) -> None:
        self._staged: dict[Path, Path] = {}
        self._names = dict(names or {})

    def path(self, final: str | os.PathLike[str]) -> Path:
        """A temporary path beside ``final``: write the output there (any writer will do)."""
        final = Path(final)
        if final not in self._staged:
            folder = None if is_stdout(final) else _folder(final)
            try:
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=_tmp_prefix(final), suffix=".tmp")
            except OSError as exc:
                raise OutputError(_write_failure(self.what(final), final, exc)) from None
            os.close(fd)
            self._staged[final] = Path(tmp)
        return self._staged[final]

    def what(self, final: Path) -> str:
        """The option that names ``final`` (for messages)."""
        return self._names.get(final, "output")

    def write(self, final: str | os.PathLike[str], data: bytes | str) -> Path:
        """Stage ``data`` for ``final``."""
        tmp = self.path(final)
        try:
            tmp.write_bytes(_encoded(data))
        except OSError as exc:
            raise OutputError(_write_failure(self.what(Path(final)), Path(final), exc)) from None
        return tmp

    def failure(self, exc: OSError) -> OutputError | None:
        """``exc``, raised while the outputs were written, as one line naming the output it
        concerns; None when it names none of them (standard output, an input)."""
        for final, tmp in self._staged.items():
            if exc.filename is not None and os.fspath(exc.filename) in (str(tmp), str(final)):
                return OutputError(_write_failure(self.what(final), final, exc))
        return None

    def _commit(self) -> None:
        for final, tmp in self._staged.items():  # every check before the first rename
            if not is_stdout(final):
                check_replace(final, file_format(read_head(tmp) or b""), what=self.what(final))
        for final, tmp in self._staged.items():
            try:
                if is_stdout(final):
                    sys.stdout.flush()
                    sys.stdout.buffer.write(tmp.read_bytes())
                    sys.stdout.flush()
                    tmp.unlink()
                    continue
                os.chmod(tmp, 0o666 & ~_umask())
                os.replace(tmp, final)
            except OSError as exc:
                raise OutputError(_write_failure(self.what(final), final, exc)) from None
        self._staged.clear()

    def _discard(self) -> None:
        for tmp in self._staged.values():
            _unlink_quietly(tmp)
        self._staged.clear()


@contextmanager
def all_or_nothing(
    outputs: Iterable[tuple[str, str | os.PathLike[str] | None]],
    *,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    writes: Mapping[str, str] | None = None,
) -> Iterator[Staging]:
    """Check every output path first, stage the files, and rename them all at the end.

    Parameters
    ----------
    outputs : iterable of (what, path or None)
        Each output the command may write, with its option name for messages; ``None`` skips;
        ``-`` is standard output.
    inputs : iterable of path-like or None
        The files the command reads: an output that is one of them is refused
        (:func:`check_output_path`).
    writes : mapping of str to str, optional
        The kind of file each option writes (``{"--plan": "JSON"}``): an existing file of another
        kind is refused before the work starts. Every output is checked again before it
        replaces a file, whatever its option (:func:`tacopt.formats.check_replace`).

    Yields
    ------
    Staging
        Write each output with ``staging.write(path, data)`` or to ``staging.path(path)``.
        On any exception (Ctrl-C included) every staged file is removed and no output changes;
        an OSError while writing (a full disk, a file-size limit) is one :class:`OutputError`.

    Raises
    ------
    OutputError
        Before anything is written, when one of the paths cannot be written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with all_or_nothing([("--a", d / "a.txt"), ("--b", None)]) as out:
    ...     _ = out.write(d / "a.txt", "A")
    >>> sorted(p.name for p in d.iterdir())
    ['a.txt']
    >>> try:
    ...     with all_or_nothing([("--a", d / "b.txt")]) as out:
    ...         _ = out.write(d / "b.txt", "B")
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> sorted(p.name for p in d.iterdir())
    ['a.txt']
    """
    inputs = list(inputs)
    names: dict[Path, str] = {}
    kinds = dict(writes or {})
    for what, path in outputs:
        if path is not None:
            checked = check_output_path(path, what=what, inputs=inputs, writes=kinds.get(what))
            names[checked] = what
    staging = Staging(names)
    try:
        yield staging
        staging._commit()
    except OSError as exc:
        failure = staging.failure(exc)
        staging._discard()
        if failure is None:
            raise
        raise failure from None
    except BaseException:
        staging._discard()
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: The first two bytes of gzip data.
GZIP_MAGIC = b"\x1f\x8b"
#: The most bytes a gzipped JSON-lines file may inflate to (a whole sweep's records: ~15 MB).
JSON_LINES_GZIP_LIMIT = 1 << 30


def read_json_lines(
    path: str | os.PathLike[str], *, what: str, error: Callable[[str], TacoptError]
) -> list[dict[str, Any]]:
    r"""The JSON objects of a JSON-lines file that a run appends to one line at a time (plain, or
    gzipped: read whole, bounded by :data:`JSON_LINES_GZIP_LIMIT`).

    The one forgiven fault is a torn last line (a run killed while writing it) after good ones.
    ``what`` names the file in messages ("records file", ...); ``error`` builds the exception.

    Raises
    ------
    TacoptError
        (made by ``error``) for a missing file, text that is not UTF-8, or a line that is not a
        JSON object.

    Examples
    --------
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = f.write_text('{"a": 1}\n{"a": 2}\n{"a": ')
    >>> read_json_lines(f, what="records file", error=TacoptError)
    [{'a': 1}, {'a': 2}]
    """
    p = Path(path)
    if not p.is_file():
        raise error(f"{what} '{p}' does not exist")
    raw = p.read_bytes()
    if raw[:2] == GZIP_MAGIC:  # committed records are gzipped (benchmarks/results/)
        raw = gunzip(raw, str(p), JSON_LINES_GZIP_LIMIT, error=error)
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise error(f"{what} '{p}' is not JSON lines (not UTF-8 text)") from None
    out: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if isinstance(record, dict):
            out.append(record)
        elif out and i == len(lines) - 1:
            break  # torn by a killed run
        else:
            raise error(f"{what} '{p}' line {i + 1} is not a JSON object")
    return out


def gunzip(
    raw: bytes, source: str, limit: int, *, error: Callable[[str], TacoptError] = TacoptError
) -> bytes:
    """``raw`` (gzip data) inflated, refusing in one line (an ``error``) data that is broken or
    would inflate beyond ``limit`` bytes, so a small hostile file cannot drive memory without
    bound.

    >>> import gzip
    >>> gunzip(gzip.compress(b"{}"), "m.json.gz", 10)
    b'{}'
    >>> gunzip(gzip.compress(b"0" * 100), "m.json.gz", 10)
    Traceback (most recent call last):
    tacopt.errors.TacoptError: m.json.gz: gzip data inflates beyond 10 bytes; refused
    """
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflate.decompress(raw, limit)
        if inflate.unconsumed_tail:
            raise error(f"{source}: gzip data inflates beyond {limit:,} bytes; refused")
        out += inflate.flush()
    except zlib.error as exc:
        raise error(f"{source}: broken gzip data: {exc}") from None
    if not inflate.eof:
        raise error(f"{source}: broken gzip data: truncated")
    return out


def decode_json(
    raw: bytes,
    source: str,
    limit: int,
    *,
    error: Callable[[str], TacoptError] = TacoptError,
    parse_int: Callable[[str], Any] | None = None,
) -> Any:
    """The JSON value of a file's bytes, gunzipped first when they start with gzip's magic (at
    most ``limit`` bytes inflated, :func:`gunzip`), then read as UTF-8 text (JSON's encoding, RFC
    8259; a leading byte-order mark is allowed); broken data is one line of ``error`` naming
    ``source``. ``parse_int`` is :func:`json.loads`'s (how integer literals are read).

    >>> import gzip
    >>> decode_json(gzip.compress(b'{"a": 1}'), "m.json.gz", 100)
    {'a': 1}
    >>> decode_json(b'{"a": ', "m.json", 100)
    Traceback (most recent call last):
    tacopt.errors.TacoptError: m.json: not valid JSON: Expecting value: ...
    >>> decode_json('{"a": 1}'.encode("utf-16"), "m.json", 100)
    Traceback (most recent call last):
    tacopt.errors.TacoptError: m.json: not UTF-8 text (UTF-16, UTF-32 or binary)
    """
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(raw, source, limit, error=error)
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in raw:
        # JSON never holds a raw NUL byte; UTF-16 and UTF-32 text always does.
        raise error(f"{source}: not UTF-8 text (UTF-16, UTF-32 or binary)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{source}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    try:
        return json.loads(text, parse_int=parse_int)
    except RecursionError:
        raise error(f"{source}: not valid JSON: arrays or objects nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or a number the decoder cannot take
        raise error(f"{source}: not valid JSON: {' '.join(str(exc).split())}") from None


def read_json(
    path: str | os.PathLike[str],
    what: str,
    limit: int,
    *,
    error: Callable[[str], TacoptError] = TacoptError,
) -> Any:
    """The JSON value of the file at ``path`` (plain or gzipped, :func:`decode_json`); a missing,
    unreadable or broken file is one line of ``error`` naming it as ``what 'path'``.

    >>> read_json("/no/such.json", "cost model file", 100)
    Traceback (most recent call last):
    tacopt.errors.TacoptError: cost model file '/no/such.json' does not exist
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise error(f"{what} '{p}' does not exist") from None
    except OSError as exc:
        raise error(f"{what} '{p}' cannot be read: {exc.strerror or exc}") from None
    return decode_json(raw, f"{what} '{p}'", limit, error=error)
