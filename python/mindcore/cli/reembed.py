"""Rewrite every vector of a store with another embedding model (``mindcore.batch.reembed``): the
long-term memories, the mind's beliefs and reflections, the context's tool vectors, and the vector
tables named with ``--text TABLE=COLUMN``; tables named with ``--skip`` keep their old model.

Readers and writers keep using the store and its old model while the rows are copied; then each
table is switched in one commit and the store records the new model. Ctrl-C stops after the chunk
in progress (every chunk is committed), and so does a crash: running the same command again
resumes and ends with exactly the vectors an uninterrupted run gives. Running it with the model the
store already uses does nothing.

The model is the hashing embedder (``--embedder hash`` with ``--dim`` and ``--seed``) or the bundled
all-MiniLM-L6-v2 (``--embedder default``); other models (an HTTP endpoint) are re-embedded from
Python with ``mindcore.batch.reembed(store, embedder=...)``.
"""

from __future__ import annotations

import argparse

from mindcore._argtypes import positive_int
from mindcore.cli._common import Progress, Stopped, add_store_argument, open_store, stop_between_steps
from mindcore.embed import Embedder
from mindcore.errors import MindcoreError

HELP = "rewrite every vector of a store with another embedding model (resumable)"
EXAMPLE = "mindcore reembed --store ./memory --embedder hash --dim 256 --text notes=text"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--embedder", choices=("hash", "default"), required=True,
                        help="the new model: 'hash' the hashing embedder (--dim, --seed), 'default' the bundled "
                             "all-MiniLM-L6-v2")
    parser.add_argument("--dim", type=positive_int, default=384, metavar="N", help="dimension of the hashing embedder (384)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the hashing embedder (0)")
    parser.add_argument("--text", action="append", default=[], metavar="TABLE=COLUMN",
                        help="re-embed a vector table of your own from this column (repeat for several)")
    parser.add_argument("--skip", action="append", default=[], metavar="TABLE",
                        help="leave this vector table with its old model (repeat for several)")
    parser.add_argument("--chunk-size", type=positive_int, default=256, metavar="N",
                        help="rows embedded per model call and committed together (256)")


def _embedder(args: argparse.Namespace) -> Embedder:
    from mindcore.embed import HashEmbedder, default_embedder

    if args.embedder == "hash":
        try:
            return HashEmbedder(args.dim, seed=args.seed)
        except (TypeError, ValueError) as e:
            raise MindcoreError(f"--dim/--seed: {e}") from None
    return default_embedder()


def _texts(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        table, sep, column = pair.partition("=")
        if not sep or not table or not column:
            raise MindcoreError(f"--text: expected TABLE=COLUMN, got {pair!r}")
        out[table] = column
    return out


def run(args: argparse.Namespace) -> int:
    from mindcore.batch import ReembedProgress, reembed

    if args.chunk_size < 1:
        raise SystemExit("mindcore reembed: --chunk-size must be at least 1")
    embedder = _embedder(args)
    texts = _texts(args.text)
    bars: dict[tuple[str, str], Progress] = {}
    with open_store(args, read_only=False) as store, stop_between_steps("the chunk in progress") as stop:

        def progress(p: ReembedProgress) -> None:
            key = (p.phase, p.table)
            bar = bars.get(key)
            if bar is None:
                for other in bars.values():
                    other.close()
                bars.clear()
                unit = {"copy": "rows", "tools": "texts", "switch": "tables"}[p.phase]
                label = "switch" if p.phase == "switch" else f"{p.phase} {p.table}"
                bar = bars[key] = Progress(label, total=p.total, unit=unit)
            bar.update(p.done - bar.done)
            stop.check()

        try:
            report = reembed(store, embedder=embedder, texts=texts, skip=args.skip, chunk_size=args.chunk_size,
                             progress=progress)
        except Stopped:
            print("stopped: every chunk so far is committed; run the same command again to resume")
            return 130
        finally:
            for bar in bars.values():
                bar.close()
    print(report)
    return 0
