"""``roofline``: op latency in microseconds from device profiles (JSON data files).

A profile (``cost_models/profiles/*.json``, format ``tacopt-device-profile``) describes one device:
peak throughput per dtype (``peak_gflops``), the fraction of it kernels achieve (``efficiency``),
memory bandwidth, a per-op launch overhead and links (bandwidth, latency) to other devices. A
profile only prices: which ops and inference types a device runs is the device's own record
(:mod:`tacopt.partitioner.targets`), so a profile prices every op it is asked about. The numbers
are indicative, with rough public sources in each file's ``source`` field.

    latency_us = max(FLOPs / (peak x efficiency), bytes / bandwidth) + launch_overhead_us

FLOPs and bytes come from :func:`tacopt.cost_models.ops.op_counts`. The compute peak is chosen by
the inference type: FLOAT uses the profile's ``float_precision`` (default float32), QUANTIZED_* use
int8, HYBRID uses ``hybrid`` (else float32). When the requested inference type differs from the
op's own (a quantized op run in float after dequantizing, say), activation bytes scale with the
element size (x4 from int8 to float, /4 back).

Transfers: ``link_cost(a, b)`` = bytes / bandwidth + latency, taken from ``a``'s profile (else
``b``'s); two devices without a profiled link exchange tensors through the host (the sum of both
hops). Conversions cost one memory pass per element on the host CPU profile. Devices without a
profile of their own (NNAPI) are priced through the alias on their device record
(:mod:`tacopt.partitioner.targets`: NNAPI is priced as the NPU).

Examples
--------
>>> m = RooflineCostModel.default()
>>> m.devices
('CPU', 'DGPU', 'GPU', 'NPU')
>>> link = m.link_cost("CPU", "GPU")
>>> round(link.per_byte * 1e6, 3), link.fixed   # us per MB, us per crossing
(125.0, 50.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.base import (
    CostModelBase,
    CostModelError,
    LinkCost,
    check_inference_type,
    needs_conversion,
)
from tacopt.cost_models.ops import inference_type as op_inference_type
from tacopt.cost_models.ops import op_counts
from tacopt.io import read_json

PROFILE_DIR = Path(__file__).with_name("profiles")
#: The most bytes a gzipped profile may inflate to (a profile is a few kB of JSON).
MAX_PROFILE_BYTES = 1 << 20
DEFAULT_PROFILES = ("mobile_cpu", "mobile_gpu", "mobile_npu", "desktop_gpu")
#: Fields of a profile file; device capability (``supported_ops``, ``inference_types``) is not
#: one of them: it is declared once, on the device's record.
_FIELDS = frozenset({"format", "device", "description", "indicative", "peak_gflops",
                     "float_precision", "efficiency", "memory_bandwidth_gbps",
                     "launch_overhead_us", "links", "source"})  # fmt: skip
_CAPABILITY = frozenset({"supported_ops", "unsupported_ops", "inference_types"})
_QUANT = {"QUANTIZED_INT8", "QUANTIZED_UINT8"}


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """One device of the roofline model (see the module docstring for the fields)."""

    device: str
    peak_gflops: Mapping[str, float]
    efficiency: float
    memory_bandwidth_gbps: float
    launch_overhead_us: float
    links: Mapping[str, tuple[float, float]]  # device -> (GB/s, latency us)
    float_precision: str = "float32"
    description: str = ""

    def peak_for(self, inference_type: str) -> float | None:
        """Achievable FLOP/s for ``inference_type``; ``None`` without a peak for its precision."""
        if inference_type in _QUANT:
            key = "int8"
        elif inference_type == "HYBRID":
            key = "hybrid" if "hybrid" in self.peak_gflops else "float32"
        else:
            key = self.float_precision
        gflops = self.peak_gflops.get(key)
        return None if gflops is None else gflops * 1e9 * self.efficiency


def load_profile(source: str | Path | Mapping[str, Any]) -> DeviceProfile:
    """Read a device profile from a JSON file (or an already-parsed dict).

    Raises
    ------
    CostModelError
        For a missing file, a field that is missing, unknown or not positive, or a field that
        declares device capability (``supported_ops``, ``inference_types``).

    Examples
    --------
    >>> load_profile(PROFILE_DIR / "mobile_gpu.json").device
    'GPU'
    """
    where = str(source) if not isinstance(source, Mapping) else "<dict>"
    if isinstance(source, Mapping):
        doc = dict(source)
    else:
        doc = read_json(source, "device profile", MAX_PROFILE_BYTES, error=CostModelError)
    if not isinstance(doc, dict):
        raise CostModelError(f"device profile '{where}': not a JSON object")
    capability = sorted(_CAPABILITY & doc.keys())
    if capability:
        raise CostModelError(
            f"device profile '{where}': field '{capability[0]}' declares what the device runs; "
            "declare it on the device instead (a TableTarget's support table, "
            "docs/targets.md), profiles only price"
        )
    unknown = sorted(doc.keys() - _FIELDS)
    if unknown:
        raise CostModelError(f"device profile '{where}': unknown field '{unknown[0]}'")
    try:
        profile = DeviceProfile(
            device=str(doc["device"]).upper(),
            peak_gflops={k: float(v) for k, v in doc["peak_gflops"].items()},
            efficiency=float(doc.get("efficiency", 1.0)),
            memory_bandwidth_gbps=float(doc["memory_bandwidth_gbps"]),
            launch_overhead_us=float(doc.get("launch_overhead_us", 0.0)),
            links={
                k.upper(): (float(v["bandwidth_gbps"]), float(v["latency_us"]))
                for k, v in doc.get("links", {}).items()
            },
            float_precision=doc.get("float_precision", "float32"),
            description=doc.get("description", ""),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CostModelError(f"device profile '{where}': bad or missing field {exc}") from None
    numbers = [profile.efficiency, profile.memory_bandwidth_gbps, *profile.peak_gflops.values()]
    if not all(np.isfinite(v) and v > 0 for v in numbers) or profile.launch_overhead_us < 0:
        raise CostModelError(f"device profile '{where}': throughputs must be positive")
    return profile


class RooflineCostModel(CostModelBase):
    """Roofline latency (us) over a set of device profiles."""

    name = "roofline"
    unit = "us"

    def __init__(self, profiles: Sequence[DeviceProfile], *, host: str = "CPU") -> None:
        self.profiles = {p.device: p for p in profiles}
        if len(self.profiles) != len(profiles):
            raise CostModelError("roofline: two profiles name the same device")
        self.devices = tuple(sorted(self.profiles))
        self.host = host if host in self.profiles else self.devices[0]

    @classmethod
    def default(cls) -> RooflineCostModel:
        """The four bundled profiles: CPU, GPU, NPU (mobile) and DGPU (desktop)."""
        return cls([load_profile(PROFILE_DIR / f"{n}.json") for n in DEFAULT_PROFILES])

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None:
        """Latency in us of op ``node`` on ``device``; ``None`` when the profile has no peak
        throughput for the inference type's precision (which ops run is the device's record).

        >>> from tacopt.fusion.ir import Op, Tensor, make_graph
        >>> ts = [Tensor("x", (1, 1000), "float32"), Tensor("y", (1, 1000), "float32")]
        >>> G = make_graph("g", ts, [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
        >>> round(RooflineCostModel.default().op_cost(G, "relu_0", "CPU", "FLOAT"), 3)
        1.533
        """
        self.check_device(device)
        check_inference_type(inference_type, model=self.name)
        if node not in G:
            raise CostModelError(f"cost model 'roofline': op '{node}' is not in the graph")
        prof = self.profiles[device]
        counts = op_counts(G, node)
        nbytes = counts.nbytes * _bytes_factor(op_inference_type(G, node), inference_type)
        peak = prof.peak_for(inference_type)
        if peak is None:
            return None  # the profile has no throughput for this precision: cannot price it
        compute_us = counts.flops / peak * 1e6
        memory_us = nbytes / (prof.memory_bandwidth_gbps * 1e9) * 1e6
        return max(compute_us, memory_us) + prof.launch_overhead_us

    def link_cost(self, src_device: str, dst_device: str) -> LinkCost:
        self.check_device(src_device)
        self.check_device(dst_device)
        if src_device == dst_device:
            return LinkCost(0.0, 0.0)
        direct = self._direct_link(src_device, dst_device)
        if direct is not None:
            return direct
        # Accelerators without a profiled link exchange tensors through host memory, as on a
        # phone SoC: the cost of the two hops through the host.
        via = [self._direct_link(src_device, self.host), self._direct_link(self.host, dst_device)]
        if self.host in (src_device, dst_device) or None in via:
            raise CostModelError(
                f"cost model 'roofline': no link between {src_device} and {dst_device} "
                f"in the device profiles, direct or through the host {self.host}"
            )
        a, b = via
        assert a is not None and b is not None
        return LinkCost(per_byte=a.per_byte + b.per_byte, fixed=a.fixed + b.fixed)

    def _direct_link(self, src_device: str, dst_device: str) -> LinkCost | None:
        if src_device == dst_device:
            return LinkCost(0.0, 0.0)
        link = self.profiles[src_device].links.get(dst_device) or self.profiles[
            dst_device
        ].links.get(src_device)
        if link is None:
            return None
        gbps, latency_us = link
        return LinkCost(per_byte=1e6 / (gbps * 1e9), fixed=latency_us)

    def conversion_cost_per_element(self, src_type: str, dst_type: str) -> float:
        """One read and one write per element on the host (float <-> int8), in us."""
        if not needs_conversion(src_type, dst_type, model=self.name):
            return 0.0
        host = self.profiles[self.host]
        return 5.0 / (host.memory_bandwidth_gbps * 1e9) * 1e6  # 4 bytes float + 1 byte int8


def _bytes_factor(own: str, want: str) -> float:
    if own in _QUANT and want not in _QUANT:
        return 4.0
    if own not in _QUANT and want in _QUANT:
        return 0.25
    return 1.0


def from_profile_file(doc: dict[str, Any], path: Path) -> RooflineCostModel:
    """The roofline model of a device-profile file (format ``tacopt-device-profile``), the CPU
    priced by the mobile CPU profile unless the file is the CPU's."""
    profile = load_profile(doc)
    cpu = load_profile(PROFILE_DIR / "mobile_cpu.json")
    return RooflineCostModel([profile] if profile.device == "CPU" else [cpu, profile])

