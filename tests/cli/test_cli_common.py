"""The CLI's shared parts: progress on a terminal and off it, and which embedder ``--embedder`` picks."""

from __future__ import annotations

import io

import pytest

from mindcore.cli._common import Progress, embedder_for
from mindcore.embed import HashEmbedder
from mindcore.errors import MindcoreError
from mindcore.store import EmbeddingInfo


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere() -> None:
    stream = io.StringIO()
    with Progress("import", total=3, unit="rows", stream=stream, tty=True) as bar:
        bar.update(2)
        bar.update(1, note="ltm_memories")
    assert "import: 100%" in stream.getvalue() and "3/3" in stream.getvalue()
    plain = io.StringIO()
    with Progress("import", total=3, unit="rows", stream=plain, tty=False, every=3600) as bar:
        bar.update(1)
        bar.update(1)
        bar.update(1)
    # The first update, then nothing until the last one (every hour at most), then no repeat at close.
    assert plain.getvalue().splitlines() == ["import: 1/3 rows", "import: 3/3 rows"]


def test_embedder_for_rebuilds_the_recorded_hashing_model() -> None:
    recorded = HashEmbedder(64, seed=7)
    built = embedder_for("recorded", EmbeddingInfo(recorded.model_id, 64))
    assert built.model_id == recorded.model_id
    assert embedder_for("hash", EmbeddingInfo(recorded.model_id, 64)).model_id == recorded.model_id
    assert embedder_for("hash", None).model_id == HashEmbedder().model_id
    with pytest.raises(MindcoreError, match="cannot build"):
        embedder_for("recorded", EmbeddingInfo("openai-compatible:text-embedding-3-small@http://x", 1536))
