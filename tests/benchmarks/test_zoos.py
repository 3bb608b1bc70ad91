"""Zoos: registry, folders, the bundled and shared zoos, synthetic generators."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.benchmarks.zoos import (
    BenchmarkError,
    ZooItem,
    folder_zoo,
    known_zoos,
    load_item,
    register_zoo,
    resnet_chain,
    resolve_zoo,
    transformer_stack,
)
from tacopt.fusion.ir import validate_graph
from tacopt.partitioner.problem import PickProblem


def test_unknown_zoo_lists_the_known_ones() -> None:
    with pytest.raises(BenchmarkError, match="unknown zoo 'nope'; known zoos: .*bundled.*shared"):
        resolve_zoo("nope")


def test_register_zoo_refuses_a_taken_name() -> None:
    with pytest.raises(BenchmarkError, match="already registered"):
        register_zoo("bundled", lambda arg: [])


@pytest.mark.parametrize("spec", ["layered:0", "layered:x", "transformer:200000"])
def test_bad_sizes_are_refused(spec: str) -> None:
    with pytest.raises(BenchmarkError, match="sizes must be"):
        resolve_zoo(spec)


def test_folder_zoo_lists_tflite_files_sorted(tmp_path: Path, bundled_dir: Path) -> None:
    for f in sorted(bundled_dir.glob("*.tflite"))[:2]:
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "notes.txt").write_text("not a model")
    items = resolve_zoo(f"folder:{tmp_path}")
    assert [i.name for i in items] == sorted(f.stem for f in tmp_path.glob("*.tflite"))
    assert all(i.kind == "tflite" and Path(i.source).is_file() for i in items)
    G = load_item(items[0])
    validate_graph(G)
    assert G.number_of_nodes() > 0


def test_empty_or_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="holds no .tflite"):
        folder_zoo(tmp_path)
    with pytest.raises(BenchmarkError, match="does not exist"):
        resolve_zoo(f"folder:{tmp_path / 'missing'}")
    with pytest.raises(BenchmarkError, match="needs a path"):
        resolve_zoo("folder")


def test_bundled_zoo_loads(bundled_dir: Path) -> None:
    items = resolve_zoo("bundled")
    assert {i.zoo for i in items} == {"bundled"}
    assert len(items) == len(list(bundled_dir.glob("*.tflite")))


def test_shared_zoo_has_48_models(shared_zoo: Path) -> None:
    items = resolve_zoo("shared")
    assert len(items) == 48
    assert items == sorted(items, key=lambda i: i.name)


def test_transformer_stack_scales_with_layers() -> None:
    one, four = transformer_stack(1), transformer_stack(4)
    validate_graph(four)
    assert four.number_of_nodes() == 4 * one.number_of_nodes()
    kinds = {four.nodes[n]["op"].kind for n in four}
    assert {"FULLY_CONNECTED", "BATCH_MATMUL", "SOFTMAX", "MEAN", "GELU", "ADD"} <= kinds
    assert four.graph["tensors"][four.graph["outputs"][0]].shape == (64, 128)


def test_resnet_chain_has_skips_and_downsampling() -> None:
    G = resnet_chain(8)
    validate_graph(G)
    adds = [n for n in G if G.nodes[n]["op"].kind == "ADD"]
    assert len(adds) == 8
    # every ADD joins two paths: the block's convs and the skip
    assert all(len(set(G.predecessors(n))) == 2 for n in adds)
    convs = [G.nodes[n]["op"] for n in G if G.nodes[n]["op"].kind == "CONV_2D"]
    strides = [op.options["stride_w"] for op in convs]
    assert 2 in strides
    int8 = resnet_chain(8, dtype="int8")
    assert int8.graph["tensors"][int8.graph["inputs"][0]].is_quantized


def test_layered_zoo_gives_pick_problems_of_the_asked_size() -> None:
    items = resolve_zoo("layered:10,100")
    problems = [load_item(i) for i in items]
    assert all(isinstance(p, PickProblem) for p in problems)
    assert [len(p.units) for p in problems] == [10, 100]
    assert load_item(items[0]) == problems[0]  # deterministic


def test_generated_sizes_span_10_to_100k_units() -> None:
    # 2,565 layers x 39 ops is the 100,000-unit op-granularity transformer; building it takes
    # seconds, so the test checks the size rule on a smaller stack and that the spec is accepted.
    assert [i.size for i in resolve_zoo("transformer:2565")] == [2565]
    assert load_item(resolve_zoo("transformer:40")[0]).number_of_nodes() == 40 * 39
    assert [i.size for i in resolve_zoo("layered:10,100000")] == [10, 100_000]


def test_items_name_importable_generators() -> None:
    item = ZooItem("x", "custom", "problem", "tests.benchmarks.crashy:small", 7, seed=1)
    assert len(load_item(item).units) == 7
    with pytest.raises(BenchmarkError, match="unknown generator 'nope'"):
        load_item(ZooItem("x", "custom", "graph", "nope", 1))
    with pytest.raises(BenchmarkError, match="cannot import"):
        load_item(ZooItem("x", "custom", "graph", "no_such_mod:f", 1))


def test_known_zoos_are_sorted_and_complete() -> None:
    names = known_zoos()
    assert names == sorted(names)
    assert {"bundled", "shared", "folder", "transformer", "resnet", "layered"} <= set(names)


# -- the shared zoo after a plain `pip install .` (issue 23) ---------------------------------


def _plain_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make zoos.py believe it was copied into site-packages, away from any clone."""
    import tacopt.benchmarks.zoos as zoos

    fake = tmp_path / "venv" / "site-packages" / "tacopt" / "benchmarks" / "zoos.py"
    monkeypatch.setattr(zoos, "__file__", str(fake))


def _clone_with_shared(tmp_path: Path, bundled_dir: Path) -> Path:
    """tmp/clone (the working copy) and tmp/shared/zoo beside it, holding one model."""
    clone, zoo = tmp_path / "clone", tmp_path / "shared" / "zoo"
    clone.mkdir()
    zoo.mkdir(parents=True)
    name = "keras__mobilenet_v2_float32.tflite"
    (zoo / name).write_bytes((bundled_dir / name).read_bytes())
    return clone


def test_shared_zoo_is_found_beside_the_clone_after_a_plain_install(
    tmp_path: Path, bundled_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plain_install(monkeypatch, tmp_path)
    clone = _clone_with_shared(tmp_path, bundled_dir)
    monkeypatch.chdir(clone)
    (item,) = resolve_zoo("shared")
    assert Path(item.source).parent == (tmp_path / "shared" / "zoo").resolve()
    assert item.zoo == "shared"
    monkeypatch.chdir(clone / "..")  # from the folder holding both, too
    assert len(resolve_zoo("shared")) == 1


def test_shared_zoo_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tacopt.benchmarks.zoos import BenchmarkError

    _plain_install(monkeypatch, tmp_path)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(BenchmarkError) as err:
        resolve_zoo("shared")
    message = str(err.value)
    assert f"no shared/zoo in {(tmp_path / 'elsewhere').resolve()} or a folder above it" in message
    assert "--zoo shared:PATH" in message and "\n" not in message
    with pytest.raises(BenchmarkError, match="'shared:nowhere': nowhere is not a folder"):
        resolve_zoo("shared:nowhere")


def test_shared_zoo_takes_a_path(tmp_path: Path, bundled_dir: Path) -> None:
    _clone_with_shared(tmp_path, bundled_dir)
    (item,) = resolve_zoo(f"shared:{tmp_path / 'shared' / 'zoo'}")
    assert item.zoo == "shared"


def _run_script(clone: Path, *args: str, out: str) -> subprocess.CompletedProcess[str]:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "run_shared_zoo.sh"
    (clone / "benchmarks").mkdir(exist_ok=True)
    (clone / "benchmarks" / "run_shared_zoo.sh").write_text(script.read_text())
    env = {**os.environ, "OUT": out, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", str(clone / "benchmarks" / "run_shared_zoo.sh"), *args],
        cwd=clone.parent, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_run_shared_zoo_sh_runs_from_a_clone_and_leaves_nothing_when_it_cannot(
    tmp_path: Path, bundled_dir: Path
) -> None:
    clone = _clone_with_shared(tmp_path, bundled_dir)
    small = ["--jobs", "1", "--no-progress"]  # the script's whole study, on one model
    bad = _run_script(clone, *small, "--zoo", "shared:nowhere", out="runs/bad")
    assert bad.returncode == 2 and "'shared:nowhere': nowhere is not a folder" in bad.stderr
    assert not (clone / "runs").exists()  # no empty results folder left behind
    ok = _run_script(clone, *small, out="runs/ok")
    assert "study took" in ok.stdout, ok.stderr  # the comparison with committed results follows
    lines = (clone / "runs" / "ok" / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert {r["model"] for r in records} == {"keras__mobilenet_v2_float32"}
    assert {r["zoo"] for r in records} == {"shared"}
