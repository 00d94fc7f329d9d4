"""The write judgement measured through the path users take: plain ``remember()`` on a real store,
with the bundled embedder, over every pair of ``tests/data/ltm_pairs.jsonl`` (one scope per pair:
remember the old text, then the new one).

Without a model a write must keep both facts of the compatible pairs; with a resolver LLM (a local
OpenAI-compatible server over real HTTP, and the scripted LLM) that answers from the labels, the
updates and contradictions it is asked about must retire the old memory. What is not compared
(the two vectors below ``related_threshold``) is never judged: that is why "caught" stays under 100%.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _openai_server import FakeOpenAI

import mindcore
from mindcore.blocks import one_line
from mindcore.eval.pairs import LabelledPair, load_pairs, score_keeping
from mindcore.llm import OpenAICompatibleLLM, ScriptedLLM
from mindcore.ltm import LongTermMemory

PAIRS_FILE = Path(__file__).parent / "data" / "ltm_pairs.jsonl"
_LINE = re.compile(r"^\[(\d+)\] (OLD|NEW): (.*)$")
_RETIRES = {"updated": "update", "superseded": "contradiction", "duplicate": "duplicate", "created": "unrelated"}


@pytest.fixture(scope="module")
def pairs() -> list[LabelledPair]:
    return load_pairs(PAIRS_FILE)


class PairVectors:
    """The bundled model's vectors for every text of the set, computed in one batch: each write
    embeds the same vector it would compute itself (a text outside the set goes to the model)."""

    def __init__(self, model: Any, texts: list[str]) -> None:
        self.model, self.dim, self.model_id = model, model.dim, model.model_id
        unique = list(dict.fromkeys(texts))
        self._vectors = dict(zip(unique, model.embed(unique), strict=True))

    def embed(self, texts: list[str]) -> Any:
        missing = [t for t in texts if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.model.embed(missing), strict=True))
        return np.stack([self._vectors[t] for t in texts])


@pytest.fixture(scope="module")
def embedder(minilm: Any, pairs: list[LabelledPair]) -> Any:
    return PairVectors(minilm, [t for p in pairs for t in (p.old, p.new)])


def label_oracle(pairs: list[LabelledPair]) -> Callable[[str], str]:
    """A resolver that answers each pair of a ``<memory-pairs>`` prompt with its label."""
    labels = {(one_line(p.old), one_line(p.new)): p.label for p in pairs}

    def answer(prompt: str) -> str:
        found: dict[int, dict[str, str]] = {}
        for line in prompt.splitlines():
            m = _LINE.match(line)
            if m:
                found.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
        verdicts = [{"pair": n, "relation": labels.get((texts["OLD"], texts["NEW"]), "unrelated"), "reason": "label"}
                    for n, texts in sorted(found.items())]
        return json.dumps({"verdicts": verdicts})

    return answer


def judged_through_remember(tmp_path: Path, pairs: list[LabelledPair], embedder: Any,
                            resolver: Any) -> list[str]:
    """What plain ``remember()`` did with each pair's new text, as a relation."""
    store = mindcore.open(tmp_path / "store")
    out = []
    for p in pairs:
        ltm = LongTermMemory(store, user_id=f"pair-{p.id}", embedder=embedder, resolver=resolver)
        ltm.remember(p.old)
        out.append(_RETIRES[str(ltm.try_remember(p.new).action)])
    return out


def test_without_a_model_no_compatible_fact_is_lost(tmp_path: Path, pairs: list[LabelledPair],
                                                     embedder: Any) -> None:
    scores = score_keeping([p.label for p in pairs], judged_through_remember(tmp_path, pairs, embedder, None))
    assert scores["compatible_lost"] <= 0.01, scores


def test_with_a_resolver_over_http_updates_and_contradictions_are_caught(tmp_path: Path, pairs: list[LabelledPair],
                                                                         embedder: Any) -> None:
    oracle = label_oracle(pairs)

    def reply(messages: list[dict[str, Any]], json_mode: bool) -> str:
        assert json_mode
        return oracle(messages[-1]["content"])

    with FakeOpenAI(reply=reply) as server:
        llm = OpenAICompatibleLLM("judge", base_url=server.base_url, api_key="test-key")
        got = judged_through_remember(tmp_path, pairs, embedder, llm)
        assert server.requests  # the model was really asked, over HTTP
    scores = score_keeping([p.label for p in pairs], got)
    assert scores["updates_caught"] >= 0.9 and scores["contradictions_caught"] >= 0.9, scores
    assert scores["compatible_lost"] <= 0.02, scores


def test_with_the_scripted_llm_as_resolver(tmp_path: Path, pairs: list[LabelledPair], embedder: Any) -> None:
    oracle = label_oracle(pairs)
    chosen = pairs[::7]
    llm = ScriptedLLM(lambda messages: oracle(str(messages[-1]["content"])))
    scores = score_keeping([p.label for p in chosen], judged_through_remember(tmp_path, chosen, embedder, llm))
    assert scores["updates_caught"] >= 0.9 and scores["contradictions_caught"] >= 0.9, scores
    assert scores["compatible_lost"] <= 0.02, scores
