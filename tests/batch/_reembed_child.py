"""A child process for tests/batch/test_reembed.py: re-embeds a store and prints each progress step
as a JSON line, then waits for a line on stdin before it goes on, so the test decides how far it
gets before the kill (however fast or slow the machine)."""

from __future__ import annotations

import json
import sys

from mindcore.batch import ReembedProgress, reembed
from mindcore.embed import HashEmbedder


def main() -> None:
    path, dim, seed, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

    def progress(p: ReembedProgress) -> None:
        print(json.dumps([p.phase, p.table, p.done, p.total]), flush=True)
        sys.stdin.readline()  # the test's go-ahead

    report = reembed(path, embedder=HashEmbedder(dim, seed=seed), chunk_size=chunk, progress=progress,
                     texts={"notes": "text"})
    print(json.dumps(["done", report.rows]), flush=True)


if __name__ == "__main__":
    main()
