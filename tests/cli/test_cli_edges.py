"""Bad input to the command line ends in one line on stderr and a non-zero exit, never a traceback,
and changes nothing: counts, ports, paths, stores that are not there, folders that are not stores."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import populate, run_cli

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import WorkingMemoryError


def one_line_error(done: subprocess.CompletedProcess[str], *, code: int | None = None) -> str:
    assert done.returncode != 0 if code is None else done.returncode == code, done
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return populate(tmp_path_factory.mktemp("cli-edges") / "store")


@pytest.mark.parametrize("args", [
    ["recall", "ltm", "tea", "--user-id", "user-7", "--namespace", "chat", "-k", "-3"],
    ["recall", "ltm", "tea", "--user-id", "user-7", "--namespace", "chat", "-k", "0"],
    ["recall", "mind", "tsmc", "--agent", "tracker", "--limit", "x"],
    ["compact", "--older-than", "-1"],
    ["import", "nowhere.jsonl", "--batch-size", "0"],
])
def test_counts_below_one_are_usage_errors(store: Path, args: list[str]) -> None:
    done = run_cli(args[0], "--store", store, *args[1:], check=False)
    err = one_line_error(done, code=2)
    assert "expected a" in err.splitlines()[-1]


def test_export_creates_the_folder_it_writes_into_and_refuses_a_folder(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "missing" / "deeper" / "export.jsonl"
    run_cli("export", "--store", store, out)
    assert out.exists() and out.read_text(encoding="utf-8").count("\n") > 5
    done = run_cli("export", "--store", store, tmp_path / "missing", check=False)
    assert "is a folder" in one_line_error(done, code=1)


def test_a_bucket_that_does_not_exist_is_one_line(s3: dict[str, str]) -> None:
    env = {k.upper(): v for k, v in s3.items()}
    done = run_cli("inspect", "--store", "s3://no-such-bucket-here/x", check=False, env=env, timeout=300)
    err = one_line_error(done, code=1)
    assert len(err.strip().splitlines()) == 1 and ".rs:" not in err, err


def test_serve_refuses_ports_out_of_range_and_prints_the_port_it_listens_on(store: Path) -> None:
    done = run_cli("serve", "--store", store, "--port", "99999", check=False)
    assert "0..65535" in one_line_error(done, code=2)
    proc = subprocess.Popen([sys.executable, "-m", "mindcore", "serve", "--store", str(store), "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = ""
        for line in proc.stderr:  # the first line names the address (a hang guard only: the timeout below)
            if "serving store" in line:
                break
        port = int(line.rsplit(":", 1)[1])
        assert port != 0
        with socket.create_connection(("127.0.0.1", port), timeout=300):
            pass
    finally:
        proc.terminate()
        proc.wait(timeout=300)


def test_serve_on_a_port_in_use_is_one_line(store: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("serve", "--store", store, "--port", str(port), check=False)
    assert "cannot listen" in one_line_error(done, code=1)


def test_recall_working_shows_a_working_memory_made_with_a_schema(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "s")
    wm = mindcore.WorkingMemory(store, thread_id="t1",
                                schema={"type": "object", "properties": {"goal": {"type": "string"}}})
    wm.update({"goal": "book a flight"})
    store.close()
    done = run_cli("recall", "--store", tmp_path / "s", "working", "--thread-id", "t1")
    assert '"goal": "book a flight"' in done.stdout


def test_a_reader_without_the_schema_refuses_to_replace_structured_state(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "s")
    schema = {"type": "object", "properties": {"goal": {"type": "string"}}}
    mindcore.WorkingMemory(store, thread_id="t1", schema=schema).update({"goal": "fly"})
    plain = mindcore.WorkingMemory(store, thread_id="t1")
    assert plain.state == {"goal": "fly"}
    with pytest.raises(WorkingMemoryError, match="structured state"):
        plain.update({"content": "text"})
    assert mindcore.WorkingMemory(store, thread_id="t1", schema=schema).state == {"goal": "fly"}


def test_inspect_names_the_model_of_a_store_made_from_python(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "s")  # no store-wide embedder: the table records its own
    mindcore.LongTermMemory(store, user_id="u", embedder=HashEmbedder()).remember("Likes tea")
    store.close()
    out = run_cli("inspect", "--store", tmp_path / "s").stdout
    assert HashEmbedder().model_id in out and "none recorded" not in out


@pytest.mark.parametrize("args", [
    ["inspect"], ["recall", "ltm", "tea", "--user-id", "u"], ["compact"], ["export", "out.jsonl"],
    ["restore", "--user-id", "u", "m1"],
])
def test_a_folder_that_is_not_a_store_is_refused_and_nothing_written(tmp_path: Path, args: list[str]) -> None:
    folder = tmp_path / "photos"
    (folder / "2024").mkdir(parents=True)
    (folder / "a.jpg").write_bytes(b"\xff\xd8")
    done = run_cli(args[0], "--store", folder, *args[1:], check=False)
    assert "not a mindcore store" in one_line_error(done, code=1)
    assert sorted(p.name for p in folder.iterdir()) == ["2024", "a.jpg"]


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(store: Path) -> None:
    """``mindcore inspect | head -1``: the reader leaves first; no traceback, the shell's 141."""
    proc = subprocess.Popen([sys.executable, "-m", "mindcore", "inspect", "--store", str(store)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # every write the command makes now fails with EPIPE
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, stderr
    assert stderr == ""


def test_compact_never_grows_a_store(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "s")
    ltm = mindcore.LongTermMemory(store, user_id="u", embedder=HashEmbedder())
    for i in range(20):
        ltm.remember(f"Fact number {i} about item {i * 7}")
    store.close()

    def size() -> int:
        return sum(p.stat().st_size for p in (tmp_path / "s").rglob("*") if p.is_file())

    before = size()
    run_cli("compact", "--store", tmp_path / "s", "--older-than", "3600")  # every version is younger
    assert size() <= before
    run_cli("compact", "--store", tmp_path / "s", "--older-than", "0")
    assert size() < before
    reopened = mindcore.LongTermMemory(mindcore.open(tmp_path / "s"), user_id="u", embedder=HashEmbedder())
    assert len(reopened.memories()) == 20


def test_a_command_loads_only_its_own_module() -> None:
    """``mindcore inspect`` starts without importing the server's and MCP's modules; ``--help`` lists all."""
    probe = ("import sys\nfrom mindcore.cli import main\n"
             "try:\n    main(['inspect', '--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('mindcore.server', 'mindcore.mcp', 'mindcore.cli.serve') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines()[-1] == "[]", done.stdout
    listing = run_cli("--help").stdout
    assert all(name in listing for name in ("serve", "mcp", "inspect", "remember-bulk", "bench"))
