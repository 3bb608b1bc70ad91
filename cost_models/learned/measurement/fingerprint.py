"""Device fingerprints: which CPU, runtime and kernels a measurement (or a model fitted on it)
stands for.

A latency measured on one machine says little about another: the issue-22 study measured int8
convolutions 5x slower on an AVX2 CPU without VNNI than on the AVX-512 CPU the shipped model was
fitted on, float ones 1.13x. So every measurement record carries the id of its device's
fingerprint (``"device"``), every records file the fingerprint itself (a ``{"type": "device"}``
record), and every learned model file the fingerprint of its training records.

A fingerprint is a plain dict (JSON):

- hardware: ``cpu`` (model name), ``vendor``, ``family`` (x86 family/model/stepping, ARM
  implementer/part), ``arch``, ``isa`` (the instruction-set extensions the kernels dispatch on,
  in canonical names: ``avx2``, ``fma``, ``avx512f``, ``avx512_vnni``, ``avx_vnni``,
  ``avx512_bf16``, ``amx``, ``neon``, ``dotprod``, ``i8mm``, ``fp16``, ``sve``, ``sme``),
  ``cores`` (logical CPUs), ``l2_bytes`` / ``l3_bytes`` (per cache instance; None when unknown),
  ``os``;
- runtime: ``litert`` (ai-edge-litert version), ``resolver`` (:data:`RESOLVERS`: ``xnnpack``,
  ``builtin``, ``ref``), ``delegate`` (``"XNNPACK"`` or None) and ``threads``.

Two measurements are of the same *device* when every field but the caches' sizes matches, so
XNNPACK with 1 and with 2 threads, or LiteRT's built-in kernels, are different devices on the
same machine (the study of issue 22 treats them so).

The hardware is read from ``/proc/cpuinfo`` and ``/sys`` (Linux) or ``sysctl`` (macOS), not
with py-cpuinfo: that library is not a dependency and takes ~1.6 s per call (it runs a CPUID
helper in a subprocess), while the few fields needed here are plain text.

>>> fp = host_fingerprint(resolver="builtin", threads=2)
>>> fp["resolver"], fp["delegate"], fp["threads"], fp["cores"] >= 1
('builtin', None, 2, True)
>>> len(fingerprint_id(fp)), fingerprint_id(fp) == fingerprint_id(dict(fp))
(12, True)
>>> device_differences(fp, {**fp, "threads": 1, "l2_bytes": 1})
['threads 2 vs 1']
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, TextIO

from tacopt.errors import TacoptError, printable

#: Op resolvers a measurement can run with: name -> (LiteRT ``OpResolverType`` name, delegate).
RESOLVERS: dict[str, tuple[str, str | None]] = {
    "xnnpack": ("AUTO", "XNNPACK"),  # LiteRT's default: builtin kernels + the XNNPACK delegate
    "builtin": ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", None),  # optimized builtins (ruy), no XNNPACK
    "ref": ("BUILTIN_REF", None),  # reference kernels
}

#: Fields that do not make two fingerprints different devices (read, not decisive).
NOT_DEVICE = frozenset({"l2_bytes", "l3_bytes", "os"})

#: Canonical ISA names and the /proc/cpuinfo flags (x86 ``flags``, ARM ``Features``) or macOS
#: sysctl keys that show them.
_ISA: dict[str, tuple[str, ...]] = {
    "sse4_2": ("sse4_2",),
    "avx": ("avx",),
    "avx2": ("avx2",),
    "fma": ("fma",),
    "f16c": ("f16c",),
    "avx512f": ("avx512f",),
    "avx512bw": ("avx512bw",),
    "avx512_vnni": ("avx512_vnni", "avx512vnni"),
    "avx_vnni": ("avx_vnni",),
    "avx512_bf16": ("avx512_bf16",),
    "amx": ("amx_tile", "amx_int8"),
    "neon": ("asimd", "neon", "hw.optional.neon", "hw.optional.AdvSIMD"),
    "dotprod": ("asimddp", "hw.optional.arm.FEAT_DotProd"),
    "i8mm": ("i8mm", "hw.optional.arm.FEAT_I8MM"),
    "fp16": ("asimdhp", "fphp", "hw.optional.arm.FEAT_FP16"),
    "bf16": ("bf16", "hw.optional.arm.FEAT_BF16"),
    "sve": ("sve",),
    "sme": ("sme", "hw.optional.arm.FEAT_SME"),
}


class FingerprintError(TacoptError):
    """A fingerprint that is not one (bad records or model file field)."""


def check_resolver(name: str) -> str:
    """``name`` if it is a known resolver, else a :class:`FingerprintError` listing them.

    >>> check_resolver("ref")
    'ref'
    """
    if name not in RESOLVERS:
        known = ", ".join(RESOLVERS)
        raise FingerprintError(f"unknown op resolver '{name}' (known: {known})")
    return name


def host_fingerprint(*, resolver: str = "xnnpack", threads: int = 1) -> dict[str, Any]:
    """The fingerprint of this machine measuring with ``resolver`` and ``threads``."""
    check_resolver(resolver)
    return {
        **_hardware(),
        "litert": _litert_version(),
        "resolver": resolver,
        "delegate": RESOLVERS[resolver][1],
        "threads": int(threads),
    }


def fingerprint_id(fp: Mapping[str, Any]) -> str:
    """A short stable id of a fingerprint (12 hex digits of a hash of its sorted JSON)."""
    blob = json.dumps(dict(fp), sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def device_differences(
    a: Mapping[str, Any], b: Mapping[str, Any], *, hardware_only: bool = False
) -> list[str]:
    """How device ``a`` differs from ``b``: one short phrase per differing field (empty when
    they are the same device). ``hardware_only`` compares the machine and the runtime version
    only, not the resolver and threads a measurement chose.

    >>> a = {"cpu": "X", "isa": ["avx2", "avx512f"], "threads": 1}
    >>> device_differences(a, {"cpu": "X", "isa": ["avx2"], "threads": 2}, hardware_only=True)
    ['isa +avx512f']
    """
    skip = set(NOT_DEVICE)
    if hardware_only:
        skip |= {"resolver", "delegate", "threads"}
    out = []
    for k in sorted((set(a) | set(b)) - skip):
        va, vb = a.get(k), b.get(k)
        if va == vb:
            continue
        if k == "isa" and isinstance(va, list) and isinstance(vb, list):
            plus = [f"+{x}" for x in va if x not in vb]
            minus = [f"-{x}" for x in vb if x not in va]
            out.append("isa " + " ".join(plus + minus))
        else:
            out.append(f"{k} {va} vs {vb}")
    return out


def describe(fp: Mapping[str, Any] | None) -> str:
    """One line naming a device.

    >>> describe({"cpu": "AMD EPYC", "arch": "x86_64", "isa": ["avx2", "fma"], "cores": 2,
    ...           "litert": "2.3.0", "resolver": "xnnpack", "delegate": "XNNPACK", "threads": 1})
    'AMD EPYC (x86_64; avx2 fma; 2 cores), LiteRT 2.3.0, XNNPACK, 1 thread'
    >>> describe(None)
    'an unrecorded device (measured before fingerprints)'
    """
    if not fp:
        return "an unrecorded device (measured before fingerprints)"
    isa = " ".join(fp.get("isa") or []) or "no listed ISA extensions"
    threads = int(fp.get("threads") or 1)
    kernels = fp.get("delegate") or {"builtin": "builtin kernels", "ref": "reference kernels"}.get(
        str(fp.get("resolver")), str(fp.get("resolver"))
    )
    return printable(  # a model file's strings reach the terminal
        f"{fp.get('cpu', '?')} ({fp.get('arch', '?')}; {isa}; {fp.get('cores', '?')} cores), "
        f"LiteRT {fp.get('litert', '?')}, {kernels}, {threads} thread{'s' if threads > 1 else ''}"
    )


def device_record(fp: Mapping[str, Any]) -> dict[str, Any]:
    """The records-file line that holds ``fp`` (records refer to it by ``device``)."""
    return {"type": "device", "device": fingerprint_id(fp), "fingerprint": dict(fp)}


def record_devices(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Fingerprints by id, from the ``device`` records of a records file.

    Raises
    ------
    FingerprintError
        A device record without a fingerprint object.
    """
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.get("type") == "device":
            fp = r.get("fingerprint")
            if not isinstance(fp, dict):
                raise FingerprintError(f"device record {r.get('device')!r} has no fingerprint")
            out[str(r.get("device") or fingerprint_id(fp))] = fp
    return out


def records_fingerprint(records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The fingerprint most of the op records were measured on (None for records written
    before fingerprints). Records of several devices get the commonest one, with the others'
    ids under ``"mixed"`` (their share of op records, so a model fitted on them says so)."""
    records = list(records)
    devices = record_devices(records)
    counts = Counter(r.get("device") for r in records if r.get("type") == "op")
    known = [(n, d) for d, n in counts.most_common() if d in devices]
    if not known:
        return None
    fp = dict(devices[known[0][1]])
    total = sum(counts.values())
    others = {str(d): round(n / total, 4) for d, n in counts.items() if d != known[0][1]}
    if others:
        fp["mixed"] = others
    return fp


def check_fingerprint(fp: Any, *, where: str) -> dict[str, Any] | None:
    """``fp`` if it is a fingerprint object (or None), else a one-line :class:`FingerprintError`
    naming ``where``."""
    if fp is None:
        return None
    if not isinstance(fp, dict) or not all(isinstance(k, str) for k in fp):
        raise FingerprintError(f"{where}: 'fingerprint' is not an object")
    return fp


def model_device_note(fp: Mapping[str, Any] | None, host: Mapping[str, Any]) -> list[str]:
    """The lines ``--cost-model`` prints for a learned model fitted on device ``fp``: which
    device it is for, and a warning when ``host`` is another machine (or runtime version).

    >>> fp = {"cpu": "X", "arch": "x86_64", "isa": ["avx2"], "cores": 2, "litert": "2.3.0",
    ...       "resolver": "xnnpack", "delegate": "XNNPACK", "threads": 1}
    >>> model_device_note(fp, fp)[1:]
    []
    >>> model_device_note(fp, {**fp, "isa": ["avx2", "avx512f"]})[1]  # doctest: +ELLIPSIS
    'warning: ... differs from the device the learned model was fitted on (isa -avx512f); ...'
    """
    lines = [f"learned cost model: fitted on {describe(fp)}"]
    if not fp:
        lines.append(
            "warning: the learned model records no device; it may not fit this machine "
            f"({describe(host)}); `tacopt calibrate` a copy or fit one here"
        )
        return lines
    diff = device_differences(fp, host, hardware_only=True)
    if diff:
        lines.append(
            f"warning: this machine ({describe(host)}) differs from the device the learned "
            f"model was fitted on ({'; '.join(diff)}); its predictions may not hold here: "
            "`tacopt calibrate` a copy or fit one here"
        )
    return lines


# ------------------------------------------------------------------------------------------------
# reading the machine
# ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _litert_version() -> str:
    try:
        return version("ai-edge-litert")
    except Exception:  # not installed as a distribution (a source build)
        return "unknown"


@lru_cache(maxsize=1)
def _hardware() -> dict[str, Any]:
    arch = platform.machine().lower() or "unknown"
    cpu, vendor, family = "", "", ""
    flags: set[str] = set()
    info = _read_text(Path("/proc/cpuinfo"))
    if info:
        cpu, vendor, family, flags = _parse_cpuinfo(info)
    elif platform.system() == "Darwin":
        cpu, flags = _darwin()
    isa = [name for name, keys in _ISA.items() if any(k in flags for k in keys)]
    if arch in ("aarch64", "arm64") and "neon" not in isa:
        isa.insert(0, "neon")  # every AArch64 CPU has Advanced SIMD
    return {
        "cpu": cpu or platform.processor() or "unknown",
        "vendor": vendor or None,
        "family": family or None,
        "arch": arch,
        "isa": isa,
        "cores": os.cpu_count() or 1,
        "l2_bytes": _cache_bytes(2),
        "l3_bytes": _cache_bytes(3),
        "os": platform.system(),
    }


def _parse_cpuinfo(text: str) -> tuple[str, str, str, set[str]]:
    """(model name, vendor, family, flags) of the first processor of a /proc/cpuinfo text.

    >>> _parse_cpuinfo("vendor_id : AuthenticAMD\\ncpu family : 25\\nmodel : 1\\n"
    ...                "model name : AMD EPYC\\nstepping : 1\\nflags : fpu avx2\\n\\n")[:3]
    ('AMD EPYC', 'AuthenticAMD', '25/1/1')
    """
    fields: dict[str, str] = {}
    for line in text.split("\n\n")[0].splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields.setdefault(k.strip().lower(), v.strip())
    flags = set((fields.get("flags") or fields.get("features") or "").split())
    if "cpu family" in fields:  # x86
        family = "/".join(fields.get(k, "?") for k in ("cpu family", "model", "stepping"))
    else:  # ARM: implementer / part
        family = "/".join(fields.get(k, "?") for k in ("cpu implementer", "cpu part"))
        family = "" if family == "?/?" else family
    cpu = fields.get("model name") or fields.get("hardware") or fields.get("processor", "")
    if cpu.isdigit():
        cpu = ""
    vendor = fields.get("vendor_id") or fields.get("cpu implementer", "")
    return re.sub(r"\s+", " ", cpu), vendor, family, flags


def _darwin() -> tuple[str, set[str]]:
    keys = sorted({k for ks in _ISA.values() for k in ks if k.startswith("hw.")})
    try:
        out = subprocess.run(
            ["sysctl", "machdep.cpu.brand_string", *keys],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "", set()
    cpu, flags = "", set[str]()
    for line in out.splitlines():
        k, _, v = line.partition(":")
        if k.strip() == "machdep.cpu.brand_string":
            cpu = v.strip()
        elif v.strip() == "1":
            flags.add(k.strip())
    return cpu, flags


def _cache_bytes(level: int) -> int | None:
    """Size of one level-``level`` (unified or data) cache of CPU 0, from Linux's sysfs."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for idx in sorted(base.glob("index*")):
        level_ok = _read_text(idx / "level").strip() == str(level)
        if not level_ok or _read_text(idx / "type").strip() not in ("Unified", "Data"):
            continue
        m = re.fullmatch(r"(\d+)([KMG]?)", _read_text(idx / "size").strip().upper())
        if m:
            return int(m.group(1)) * units[m.group(2)]
    return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def learned_fingerprints(model: Any) -> list[dict[str, Any] | None]:
    """The fingerprints of the learned models inside ``model`` (a cost model, possibly checked
    or a chain), in chain order; None for one fitted before fingerprints."""
    out: list[dict[str, Any] | None] = []
    todo = [model]
    while todo:
        m = todo.pop(0)
        inner = getattr(m, "__dict__", {})
        if "inner" in inner:
            todo.insert(0, inner["inner"])
        elif "models" in inner:
            todo[:0] = list(inner["models"])
        doc = inner.get("doc")
        if isinstance(doc, Mapping) and doc.get("format") == "tacopt-learned":
            out.append(doc.get("fingerprint"))
    return out


def announce_learned_devices(model: Any, stream: TextIO) -> None:
    """For each learned model in ``model``: one line on ``stream`` naming the device it was
    fitted on, and one warning when this machine differs (:func:`model_device_note`). The CLI
    calls it once per command, after building ``--cost-model``."""
    fps = learned_fingerprints(model)
    if not fps:
        return
    host = host_fingerprint()
    for fp in fps:
        for line in model_device_note(fp, host):
            print(printable(line), file=stream)  # the model file's strings (its ISA names)
