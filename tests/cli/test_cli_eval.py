"""``mindcore eval``: the LoCoMo and tool-discovery tables on a subset (``--limit``), equal to what
``mindcore.eval`` computes in-process for the same subset; without the data, one line saying how to
provide it."""

from __future__ import annotations

from pathlib import Path

from _cli_helpers import fresh_clone, run_cli

from mindcore.embed import HashEmbedder
from mindcore.eval.locomo import KS, RETRIEVERS, evaluate_locomo, load_locomo
from mindcore.eval.tools import load_metatool, rankings, register, score_metatool


def test_locomo_subset_prints_each_retriever_and_the_summary(data_dir: Path) -> None:
    out = run_cli("eval", "locomo", "--data", data_dir, "--limit", "1", "--embedder", "hash").stdout
    conversations = load_locomo(data_dir / "locomo" / "locomo10.json")[:1]
    weights, context, options = RETRIEVERS["mindcore"]
    report = evaluate_locomo(conversations=conversations, embedder=HashEmbedder(), weights=weights, context=context,
                             options=options)
    assert f"\nmindcore\n{report.table()}\n" in out
    expected = f"| mindcore | {report.n['all']} | " + " | ".join(f"{100 * report.overall[k]:.1f}" for k in KS) + " |"
    assert expected in out
    assert "\nbm25\n| questions | n | R@5" in out
    assert "| DRAGON (published) |  | 56.7 | 66.2 | 76.7 | 82.7 |" in out
    assert "ltm: locomo recall@k (1 conversations," in out


def test_tool_discovery_subset_matches_the_library(data_dir: Path, tmp_path: Path) -> None:
    out = run_cli("eval", "tools", "--data", data_dir, "--set", "metatool", "--strategy", "bm25", "--limit", "20",
                  "--embedder", "hash").stdout
    data = load_metatool(data_dir / "tools" / "metatool", limit=20, pair_limit=20)
    ctx = register(data.tools, HashEmbedder(), tmp_path)
    scores = score_metatool(data, rankings(ctx, [q for q, _ in data.single], "bm25"),
                            rankings(ctx, [q for q, _ in data.pairs], "bm25"))
    assert "context: MetaTool tool discovery (20 queries, 20 two-tool queries" in out
    assert "| strategy | hit@1 | r@5 | r@10 | both@5 | both@10 | queries |" in out
    row = "| bm25 | " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in scores.values()) + " |"
    assert row in out


def test_a_missing_data_folder_is_one_line(tmp_path: Path) -> None:
    done = run_cli("eval", "tools", "--data", tmp_path / "nope", check=False)
    assert done.returncode == 1 and done.stderr.strip().endswith("not a folder")


def test_without_data_one_line_says_how_to_provide_it(tmp_path: Path) -> None:
    env = fresh_clone(tmp_path)
    for name in ("locomo", "tools"):
        done = run_cli("eval", name, "--embedder", "hash", check=False, env=env)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        line = done.stderr.strip()
        assert "\n" not in line and line.startswith("mindcore eval: evaluation data not found"), line
        assert "give --data DIR or set MINDCORE_DATA_DIR" in line, line
        assert line.endswith(f"place it at {tmp_path / 'shared' / 'data'}"), line  # beside the clone


def test_a_data_folder_without_the_set_is_one_line(tmp_path: Path) -> None:
    done = run_cli("eval", "locomo", "--data", tmp_path, "--embedder", "hash", check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == f"mindcore eval: evaluation data incomplete: no {tmp_path / 'locomo' / 'locomo10.json'}"
