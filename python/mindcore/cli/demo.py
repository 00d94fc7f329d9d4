"""``mindcore demo``: runs every part on the embedded defaults (no API key, no network) in a throwaway
folder and prints what each one did."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import mindcore
from mindcore import kernels


def _step(title: str) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    def wrap(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        def run(home: Path) -> None:
            print(f"\n== {title}")
            t0 = time.perf_counter()
            fn(home)
            print(f"   ({(time.perf_counter() - t0) * 1000:.0f} ms)")

        return run

    return wrap


@_step("kernels (Rust)")
def _kernels(home: Path) -> None:
    text = "Deploy with OPENAI_API_KEY=sk-proj-Qx7Lm2Wv9Rt4Zp8Kd3NbT3BlbkFJHs6Yc1Gf5Jq0Ue7Ia2 tomorrow."
    print(f"   o200k tokens in {text[:30]!r}...: {kernels.count_tokens(text)}")
    print(f"   secret found: {kernels.looks_like_secret(text)}; redacted: {kernels.redact_secrets(text)!r}")
    docs = ["the cat sat on the mat", "dogs chase cats", "stock prices fell sharply today"]
    idx, scores = kernels.BM25Index(docs).top_k("cat on a mat", 2)
    print(f"   BM25 best for 'cat on a mat': {docs[int(idx[0])]!r} ({float(scores[0]):.2f})")
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((100_000, 384), dtype=np.float32)
    top = kernels.hybrid_topk(matrix[42] + 0.1, matrix, k=3)
    print(f"   hybrid top-3 over 100,000 x 384: rows {top.indices.tolist()}")


@_step("store (LanceDB, embedded)")
def _store(home: Path) -> None:
    import pyarrow as pa

    from mindcore.embed import default_embedder
    from mindcore.store import col

    embedder = default_embedder()
    store = mindcore.open(home / "store", embedder=embedder)
    notes = store.table("demo_notes", {"text": pa.string()}, vectors=True)
    texts = ["Paris is the capital of France", "The user prefers tea over coffee", "Rust has no GC"]
    vecs = embedder.embed(texts)
    notes.upsert("user-7", [{"id": f"n{i}", "text": t, "vector": v, "tags": ["demo"]}
                            for i, (t, v) in enumerate(zip(texts, vecs, strict=True))])
    print(f"   embedder: {embedder.model_id} (offline, {embedder.dim}-d)")
    hits = notes.search("user-7", "what does the user drink", k=1)
    print(f"   {notes.count('user-7', col('tags').contains_all(['demo']))} rows; nearest to "
          f"'what does the user drink': {notes.get_one('user-7', hits[0].id)['text']!r}")  # type: ignore[index]


@_step("working memory")
def _working(home: Path) -> None:
    store = mindcore.open(home / "store")
    schema = {"type": "object", "properties": {"goal": {"type": "string"},
                                               "done": {"type": "array", "items": {"type": "string"}}}}
    wm = mindcore.WorkingMemory(store, thread_id="t1", resource_id="user-7", scope="resource", schema=schema)
    wm.update({"goal": "book a flight"})
    result = wm.call("working_memory_update", '{"done": ["picked dates"]}')
    print(f"   tool call -> {result['status']}; a bad one -> "
          f"{wm.call('working_memory_update', '{not json')['status']}")
    print("   " + wm.render().replace("\n", "\n   "))


@_step("long-term memory (extraction by a scripted LLM: no API key)")
def _long_term(home: Path) -> None:
    import json

    from mindcore.llm import ScriptedLLM

    facts = [{"text": "Prefers green tea over coffee", "kind": "preference", "importance": 0.8},
             {"text": "Password is hunter2-SECRET, token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
              "kind": "fact", "importance": 0.9},
             {"text": "Lives in Lyon", "kind": "fact", "importance": 0.6}]
    llm = ScriptedLLM([json.dumps(facts)])
    ltm = mindcore.LongTermMemory.create(mindcore.open(home / "store"), user_id="user-7", namespace="chat",
                                         extractor=llm, enabled=True)
    assert ltm is not None
    report = ltm.remember_conversation([
        {"role": "user", "content": "I moved to Lyon last year. I only drink green tea."},
        {"role": "assistant", "content": "Noted: tea, not coffee."},
    ])
    print(f"   extracted {report.candidates} candidates: stored {len(report.stored)}, "
          f"refused as secrets {report.secrets}")
    hits = ltm.recall("what should I offer the user to drink?", k=2)
    print("   " + ltm.render(hits).replace("\n", "\n   "))
    ltm.close()  # writes the recall's last-access bumps now, before the demo folder goes


@_step("agent mind (the model's tool calls, scripted)")
def _mind(home: Path) -> None:
    from mindcore.embed import default_embedder

    mind = mindcore.Mind(mindcore.open(home / "store"), agent="research-tracker", embedder=default_embedder())
    with mind.run() as run:
        print(f"   header on an empty store: {run.header!r}")
        run.call("mind_set_goal", {"description": "Track TSMC capacity", "priority": "high"})
        run.call("mind_believe", {"content": "TSMC N3 capacity is booked through Q2", "confidence": "high"})
        run.call("mind_reflect", {"content": "Always cite the earnings call", "pin": True})
        bad = run.call("mind_believe", {"content": "x", "confidence": "certain"})
        print(f"   a bad tool call -> {bad['status']}: {bad['error'][:60]}...")
    with mind.run() as run:
        print("   " + run.header.replace("\n", "\n   "))
        found = run.call("mind_recall", {"query": "TSMC capacity"})
        print(f"   mind_recall('TSMC capacity') -> {[r.get('type') for r in found['results']]}")


@_step("context assembly (tool discovery, a session, one turn's context)")
def _context(home: Path) -> None:
    from mindcore.context import Context, Tool
    from mindcore.embed import default_embedder

    ctx = Context(mindcore.open(home / "store"), dataset="demo-agent", embedder=default_embedder())
    ctx.register([
        Tool("get_weather", "Current weather and forecast for a city", {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"}}}),
        Tool("book_flight", "Book a flight between two airports on a date", {"type": "object", "properties": {
            "origin": {"type": "string"}, "destination": {"type": "string"}, "date": {"type": "string"}}}),
        Tool("send_email", "Send an e-mail to a contact", {"type": "object", "properties": {
            "to": {"type": "string"}, "body": {"type": "string"}}}),
    ])
    found = ctx.discover("book a flight to Paris", limit=2, strategy="hybrid")
    print(f"   discover('book a flight to Paris') -> {[(t.name, round(t.score, 2)) for t in found]}")
    session = ctx.session("chat-1")
    session.append([{"role": "user", "content": f"message {i}: " + "words " * 30} for i in range(40)])
    turn = session.context.messages(strategy="recent", max_tokens=400).assemble()
    print(f"   recent context: {turn.included_messages} of {turn.total_messages} messages, "
          f"~{turn.token_estimate} tokens")
    _serve_once(home)


def _serve_once(home: Path) -> None:
    """The agentified-compatible HTTP server on 127.0.0.1 (a free port), asked for its health."""
    try:
        import uvicorn
    except ImportError:
        print("   (mindcore serve needs uvicorn: pip install 'mindcore[server]')")
        return
    import json
    import socket
    import threading
    import urllib.request

    from mindcore.server import create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(home / "server-store"), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.05)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as reply:
            print(f"   mindcore serve on 127.0.0.1:{port}: GET /health -> {reply.status} {json.loads(reply.read())}")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


DEMO_STEPS: list[Callable[[Path], None]] = [_kernels, _store, _working, _long_term, _mind, _context]


def demo() -> None:
    print(f"mindcore {mindcore.__version__}: offline demo on the embedded defaults")
    with tempfile.TemporaryDirectory(prefix="mindcore-demo-") as tmp:
        for step in DEMO_STEPS:
            step(Path(tmp))
    print("\nok")


HELP = "run every part offline on the embedded defaults"
EXAMPLE = "mindcore demo"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``demo`` takes no options."""


def run(args: argparse.Namespace) -> int:
    demo()
    return 0
