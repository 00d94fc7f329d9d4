"""LoCoMo recall through mindcore.batch.recall: the same rankings, so the same recall@k, as a
LongTermMemory per conversation (the benches and ``mindcore eval locomo --batch`` rely on it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mindcore.batch import recall
from mindcore.embed import HashEmbedder
from mindcore.eval.locomo import KS, RETRIEVERS, evaluate_locomo, load_locomo


def test_batch_recall_gives_the_ltm_loops_recall_at_k(data_dir: Path) -> None:
    conversations = load_locomo(data_dir / "locomo" / "locomo10.json")[:2]
    for name in ("mindcore", "mindcore-seed"):
        weights, context, options = RETRIEVERS[name]
        loop = evaluate_locomo(conversations=conversations, embedder=HashEmbedder(), weights=weights,
                               context=context, options=options)
        batch = evaluate_locomo(conversations=conversations, embedder=HashEmbedder(), weights=weights,
                                context=context, options=options, batch_recall=recall)
        assert batch.n == loop.n and batch.n["all"] > 300
        assert batch.overall == loop.overall and batch.by_category == loop.by_category


def test_eval_cli_runs_locomo_through_batch_recall(data_dir: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mindcore", "eval", "locomo", "--data", str(data_dir), "--limit", "1",
                           "--embedder", "hash", "--batch", "--retriever", "mindcore"],
                          capture_output=True, text=True, timeout=300, check=True)
    out = done.stdout
    conversations = load_locomo(data_dir / "locomo" / "locomo10.json")[:1]
    weights, context, options = RETRIEVERS["mindcore"]
    report = evaluate_locomo(conversations=conversations, embedder=HashEmbedder(), weights=weights, context=context,
                             options=options)
    expected = f"| mindcore | {report.n['all']} | " + " | ".join(f"{100 * report.overall[k]:.1f}" for k in KS) + " |"
    assert expected in out
