"""An error is one line even when what it names holds line breaks or control characters.

(The 100,000-case fuzz campaign of 2026-11-25 found a mutated tensor name with a newline printed
raw by ``tacopt inspect``: three stderr lines.)
"""

from __future__ import annotations

import pytest

from tacopt.partitioner.cli import main


@pytest.mark.parametrize("name", ["G\nPU", "G\rPU\x03", "GPU\u2028X", "GP\udc80U"])
def test_a_name_with_line_breaks_is_shown_escaped_on_one_line(bundled_models, capsys, name):
    model = str(bundled_models["keras__mobilenet_v2_float32.tflite"])
    assert main(["partition", model, "--devices", name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "unknown device" in err and "Traceback" not in err
    err.encode("utf-8")  # printable as UTF-8 (a lone surrogate is escaped)
