"""Cost-model files: JSON, gzipped when the name ends in ``.gz`` (a learned model's trees take
megabytes of text and a few as gzip), read and written in one place.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "m.json.gz"
>>> _ = p.write_bytes(model_bytes({"format": "x", "w": [1.5]}, p))
>>> read_model_doc(p)
{'format': 'x', 'w': [1.5]}
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any

from tacopt.cost_models.protocol import CostModelError
from tacopt.io import read_json

#: The most bytes a gzipped model file may inflate to (the shipped model: ~10 MB).
MAX_MODEL_BYTES = 256 << 20


def read_model_doc(path: str | os.PathLike[str]) -> Any:
    """The decoded JSON of a model file, gunzipped first when it starts with gzip's magic.

    Raises
    ------
    CostModelError
        If the file is missing or unreadable, broken gzip, or not JSON (one line naming it),
        or a learned model that breaks its schema
        (:func:`tacopt.cost_models.learned.fitting.schema.check_model_doc`).
    """
    doc = read_json(path, "cost model file", MAX_MODEL_BYTES, error=CostModelError)
    if isinstance(doc, dict) and doc.get("format") == "tacopt-learned":
        # imported here: reading a device profile does not load the learned model's modules
        from tacopt.cost_models.learned.fitting.schema import check_model_doc

        check_model_doc(doc, os.fspath(path))
    return doc


def model_bytes(doc: Any, path: str | os.PathLike[str]) -> bytes:
    """``doc`` as the bytes of a model file at ``path``: compact JSON with sorted keys, gzipped
    (with no timestamp, so the same model gives the same bytes) when ``path`` ends in ``.gz``."""
    text = (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()
    return gzip.compress(text, mtime=0) if str(path).endswith(".gz") else text
