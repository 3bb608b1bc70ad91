"""Issue 22: an op the delegate refuses runs in LiteRT's builtin kernels, often several times
slower; every op record says whether the run's delegate took it (``delegated``)."""

from __future__ import annotations

from tacopt.cost_models.learned.measurement.speed import reference_models
from tacopt.cost_models.learned.measurement.timing import MeasureConfig, time_models
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.writer import serialize_tflite


def pool(k: int, stride: int) -> bytes:
    b = GraphBuilder(f"pool{k}")
    y = b.op("AVERAGE_POOL_2D", b.input("x", (1, 16, 16, 8)), padding="VALID",
             stride_h=stride, stride_w=stride, filter_height=k, filter_width=k)  # fmt: skip
    return serialize_tflite(b.build(outputs=[y]))


def test_timings_say_whether_xnnpack_took_the_op() -> None:
    """XNNPACK refuses a 1x1 average pool of stride 2 (a subsampling) and every LSTM; it takes a
    2x2 pool and a conv. Without a delegate (LiteRT's builtin kernels) there is nothing to say."""
    cfg = MeasureConfig(samples=2, rounds=1, quiet_target=0, retry_rounds=0)
    refs = reference_models()
    timings = time_models([pool(2, 2), pool(1, 2), refs["conv"], refs["lstm"]], cfg)
    assert [getattr(t, "delegated", t) for t in timings] == [True, False, True, False]
    builtin = MeasureConfig(samples=2, rounds=1, quiet_target=0, retry_rounds=0, resolver="builtin")
    off = time_models([pool(2, 2)], builtin)[0]
    assert not isinstance(off, Exception) and off.delegated is None
