"""Two real processes remembering for the same user at the same time lose nothing and create no
duplicate ids."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.ltm import LongTermMemory

WORDS = ["amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp", "lantern", "meadow", "nectar", "orchid", "pebble", "quartz", "raven", "saffron", "tundra", "umber", "velvet", "willow", "xenon", "yarrow", "zephyr", "anchor", "bramble", "cobalt", "dune", "falcon", "glacier", "hazel", "iris", "jasper", "kiln", "lotus", "marble", "nutmeg", "onyx", "prairie", "quill", "ripple", "sequoia"]

WRITER = textwrap.dedent(
    """
    import json, sys
    import mindcore
    from mindcore.embed import HashEmbedder
    from mindcore.ltm import LongTermMemory

    uri, facts_path, out_path = sys.argv[1:4]
    facts = json.loads(open(facts_path).read())
    ltm = LongTermMemory(mindcore.open(uri), user_id="shared-user", namespace="chat",
                         embedder=HashEmbedder(), max_items=0)
    statuses = []
    for text in facts:  # one write per fact: as many commits as possible racing the other process
        statuses.append(ltm.try_remember(text).status)
    ltm.close()
    open(out_path, "w").write(json.dumps(statuses))
    """
)


def _facts(rng: random.Random, n: int, tag: str) -> list[str]:
    return [f"The user {tag} likes " + " ".join(rng.sample(WORDS, 6)) for _ in range(n)]


def test_two_processes_remembering_at_once(tmp_path: Path) -> None:
    uri = str(tmp_path / "store")
    rng = random.Random(7)
    n = 40
    facts = {"a": _facts(rng, n, "alpha"), "b": _facts(rng, n, "bravo")}
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = []
    for name, items in facts.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(items))
        procs.append(subprocess.Popen(
            [sys.executable, str(script), uri, str(tmp_path / f"{name}.json"), str(tmp_path / f"{name}.out")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    statuses = [json.loads((tmp_path / f"{name}.out").read_text()) for name in facts]
    ltm = LongTermMemory(mindcore.open(uri), user_id="shared-user", namespace="chat",
                         embedder=HashEmbedder(), max_items=0)
    stored = ltm.memories()
    ids = [m.id for m in stored]
    assert len(ids) == len(set(ids)), "duplicate ids"
    expected = {t for name, items in facts.items() for t, s in zip(items, statuses[list(facts).index(name)],
                                                                    strict=True) if s == "stored"}
    # A stored fact is live, or retired by a later one that updates or contradicts it (in history).
    live = {m.text for m in stored}
    retired = {v.text for m in stored for v in ltm.history(m.id) if v.action in ("updated", "superseded")}
    assert live | retired == expected, "a stored fact was lost"
    assert not live & retired
    # The facts are distinct, so (almost) everything must have been stored.
    assert len(expected) >= 2 * n - 2
