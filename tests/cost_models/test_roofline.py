"""Roofline model: profiles as data, max(compute, memory) + overhead, links, bad profiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tacopt.cost_models.base import CostModelError, get_cost_model
from tacopt.cost_models.roofline import PROFILE_DIR, RooflineCostModel, load_profile
from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph


def fc(n: int) -> object:
    #  x[1,n] -> [FULLY_CONNECTED w[n,n]] -> y[1,n]
    ts = [
        Tensor("x", (1, n), "float32"),
        Tensor("y", (1, n), "float32"),
        Tensor("w", (n, n), "float32", buffer=Buffer.placeholder(n * n * 4)),
    ]
    return make_graph(
        "g", ts, [Op("fc_0", "FULLY_CONNECTED", ("x", "w", None), ("y",))], ["x"], ["y"]
    )


def test_every_bundled_profile_loads_and_cites_sources() -> None:
    for path in sorted(PROFILE_DIR.glob("*.json")):
        doc = json.loads(path.read_text())
        assert doc["source"] and "indicative" in doc
        assert load_profile(path).device == doc["device"]


def test_matrix_vector_is_memory_bound_on_cpu() -> None:
    m = RooflineCostModel.default()
    cpu = m.profiles["CPU"]
    G = fc(1024)
    nbytes = (1024 * 1024 + 2 * 1024) * 4
    expected = nbytes / (cpu.memory_bandwidth_gbps * 1e9) * 1e6 + cpu.launch_overhead_us
    assert m.op_cost(G, "fc_0", "CPU", "FLOAT") == pytest.approx(expected)
    assert m.op_cost(G, "fc_0", "CPU", "QUANTIZED_INT8") < expected  # int8 moves 4x fewer bytes
    assert m.op_cost(G, "fc_0", "GPU", "QUANTIZED_INT8") is None  # no int8 peak in the GPU profile
    assert m.op_cost(G, "fc_0", "NPU", "HYBRID") is None  # no hybrid or float32 peak


def test_links_and_bad_devices() -> None:
    m = get_cost_model("roofline")
    assert m.link_cost("GPU", "CPU").fixed == 50.0 and m.link_cost("CPU", "CPU").cost(9) == 0
    via_host = m.link_cost("GPU", "NPU")  # no profiled link: two hops through the CPU's memory
    gpu_cpu, cpu_npu = m.link_cost("GPU", "CPU"), m.link_cost("CPU", "NPU")
    assert via_host.fixed == gpu_cpu.fixed + cpu_npu.fixed
    assert via_host.per_byte == pytest.approx(gpu_cpu.per_byte + cpu_npu.per_byte)
    with pytest.raises(CostModelError, match="unknown device 'TPU'"):
        m.op_cost(fc(4), "fc_0", "TPU", "FLOAT")
    assert m.conversion_cost_per_element("FLOAT", "QUANTIZED_INT8") > 0


def test_profile_file_as_spec_and_bad_profile(tmp_path: Path) -> None:
    doc = json.loads((PROFILE_DIR / "mobile_gpu.json").read_text())
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(doc))
    m = get_cost_model(str(path))
    assert m.devices == ("CPU", "GPU") and m.unit == "us"
    doc["memory_bandwidth_gbps"] = -1
    path.write_text(json.dumps(doc))
    with pytest.raises(CostModelError, match="must be positive"):
        get_cost_model(str(path))
    del doc["peak_gflops"]
    with pytest.raises(CostModelError, match="missing field"):
        load_profile(doc)


def test_profiles_only_price_capability_lives_on_the_device(tmp_path) -> None:
    m = RooflineCostModel.default()
    assert "NNAPI" not in m.devices  # NNAPI's record says it is priced as the NPU
    doc = json.loads((PROFILE_DIR / "mobile_gpu.json").read_text())
    for field in ("supported_ops", "inference_types"):
        bad = dict(doc, **{field: ["ADD"]})
        with pytest.raises(CostModelError, match=f"field '{field}' declares what the device runs"):
            load_profile(bad)
    with pytest.raises(CostModelError, match="unknown field 'peak_gflop'"):
        load_profile(dict(doc, peak_gflop=1.0))
