"""docker/Dockerfile, the image of ``mindcore serve``, tested without a Docker engine.

The file is read (its stages and their ``ENV``, ``USER``, ``VOLUME``, ``EXPOSE``, ``HEALTHCHECK``,
``ENTRYPOINT`` and ``CMD``), then the runtime stage's command runs here as a real process of the
installed package: the same arguments and environment, a temporary folder in place of the volume
and a free port in place of the exposed one. The ``HEALTHCHECK`` command runs against it; the nginx
example of docker/README.md is checked against ``mindcore serve``'s defaults. Where ``docker info``
succeeds the image itself is built and run too.

CI's wheel check (tests/wheel) runs this file against the release wheel installed with the
``server`` extra, as the image installs it. Only the standard library talks HTTP here, so it runs
in that venv unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import metadata
from pathlib import Path
from typing import IO

import pytest
from conftest import HANG

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
DOCKER_README = ROOT / "docker" / "README.md"
TOKEN = "docker-recipe-" + "x" * 24
REQUEST_ID = "recipe-req-1"
FORWARDED_CLIENT = "203.0.113.7"  # TEST-NET-3: an address no real client has
_LISTENING = re.compile(r"serving store (\S+) on http://([^\s:]+):(\d+)")


# --- reading the Dockerfile -----------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    flags: dict[str, list[str]]  # --name=value, by name (RUN may repeat --mount)
    rest: str

    def exec_form(self) -> list[str]:
        """The instruction's JSON array (ENTRYPOINT, CMD, HEALTHCHECK's command)."""
        text = self.rest.removeprefix("CMD").strip() if self.keyword == "HEALTHCHECK" else self.rest
        value = json.loads(text)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), f"{self.keyword}: not exec form"
        return value


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        """The instruction that takes effect (Docker keeps the last CMD, ENTRYPOINT, USER, ...)."""
        found = self.all(keyword)
        assert found, f"the stage from {self.base} has no {keyword}"
        return found[-1]

    def env(self) -> dict[str, str]:
        """The stage's ``ENV`` values, in order (``$NAME`` of an earlier one expanded)."""
        values: dict[str, str] = {}
        for instruction in self.all("ENV"):
            words = shlex.split(instruction.rest)
            pairs = [w.split("=", 1) for w in words] if "=" in words[0] else [[words[0], " ".join(words[1:])]]
            for key, value in pairs:
                values[key] = re.sub(r"\$\{?(\w+)\}?", lambda m: values.get(m[1], m[0]), value)
        return values


def _logical_lines(text: str) -> Iterator[str]:
    """Instructions with their continuation lines joined; comment lines dropped (also between
    continuation lines, as Docker does)."""
    pending = ""
    for line in text.splitlines():
        if line.strip().startswith("#") or (not line.strip() and not pending):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1]
            continue
        yield (pending + line).strip()
        pending = ""
    assert not pending.strip(), "the Dockerfile ends inside a continued line"


def parse_dockerfile(text: str) -> list[Stage]:
    stages: list[Stage] = []
    for line in _logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        flags: dict[str, list[str]] = {}
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            name, _, value = flag[2:].partition("=")
            flags.setdefault(name, []).append(value)
            rest = rest.strip()
        if keyword == "FROM":
            words = rest.split()
            stages.append(Stage(words[0], words[2] if len(words) == 3 and words[1].upper() == "AS" else None))
        elif stages:
            stages[-1].instructions.append(Instruction(keyword, flags, rest))
    return stages


def _stages() -> tuple[Stage, Stage]:
    stages = parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))
    assert len(stages) == 2, [s.base for s in stages]
    return stages[0], stages[1]


@dataclass(frozen=True)
class Recipe:
    """What the runtime stage runs, with the image's paths and port."""

    argv: list[str]
    env: dict[str, str]
    port: int
    volume: str
    healthcheck: list[str]
    healthcheck_flags: dict[str, list[str]]
    user: str


def recipe() -> Recipe:
    _, runtime = _stages()
    exposed = [int(p.split("/")[0]) for i in runtime.all("EXPOSE") for p in i.rest.split()]
    assert len(exposed) == 1, exposed
    volumes = [v for i in runtime.all("VOLUME") for v in (json.loads(i.rest) if i.rest.startswith("[") else i.rest.split())]
    assert len(volumes) == 1, volumes
    health = runtime.last("HEALTHCHECK")
    return Recipe(argv=runtime.last("ENTRYPOINT").exec_form() + runtime.last("CMD").exec_form(), env=runtime.env(),
                  port=exposed[0], volume=volumes[0], healthcheck=health.exec_form(),
                  healthcheck_flags=health.flags, user=runtime.last("USER").rest)


def _option(argv: list[str], name: str) -> str:
    assert argv.count(name) == 1, f"{name} not given once in {argv}"
    return argv[argv.index(name) + 1]


# --- the Dockerfile's promises ------------------------------------------------------------------


def test_runtime_stage_is_slim_python_as_a_non_root_user() -> None:
    _, runtime = _stages()
    assert re.fullmatch(r"python:3\.11-slim(-\$\{DEBIAN\}|-\w+)?", runtime.base), runtime.base
    r = recipe()
    user = r.user.split(":")[0]
    assert user.isdigit() and int(user) != 0, f"USER {r.user}: a numeric uid other than root's"
    # The wheel is installed with the extra that brings the server (uvicorn, httptools, ...).
    installs = " ".join(i.rest for i in runtime.all("RUN"))
    assert re.search(r"pip install [^&]*\.whl\)?\[server\]", installs), installs
    assert "server" in (metadata("mindcore").get_all("Provides-Extra") or [])


def test_runtime_command_serves_the_volume_on_the_exposed_port_with_json_logs() -> None:
    r = recipe()
    assert r.argv[:2] == ["mindcore", "serve"], r.argv
    assert _option(r.argv, "--host") == "0.0.0.0"
    assert int(_option(r.argv, "--port")) == r.port == 9119
    assert _option(r.argv, "--log-format") == "json"
    # The store is the volume, through MINDCORE_HOME (which every mindcore command reads).
    assert "--store" not in r.argv and r.env.get("MINDCORE_HOME") == r.volume, (r.env, r.volume)
    assert r.env["PATH"].split(":")[0].endswith("/bin") and r.env["PATH"].endswith(":$PATH"), r.env["PATH"]


def test_no_secret_is_baked_into_the_image() -> None:
    """The token comes from the environment at run time: an ENV or ARG would show in ``docker history``."""
    arguments = re.findall(r"^\s*ARG\s+(\w+)", DOCKERFILE.read_text(encoding="utf-8"), flags=re.M)
    names = [*recipe().env, *arguments]
    assert not [n for n in names if re.search(r"TOKEN|SECRET|PASSWORD|KEY", n, flags=re.I)], names
    assert "--token" not in recipe().argv


def test_healthcheck_is_the_standard_library_fetching_health() -> None:
    r = recipe()
    assert r.healthcheck[:2] == ["python", "-c"], r.healthcheck
    assert f"'http://127.0.0.1:{r.port}/health'" in r.healthcheck[2]
    assert set(r.healthcheck_flags) <= {"interval", "timeout", "start-period", "start-interval", "retries"}


def test_builder_copies_everything_the_wheel_build_reads() -> None:
    """The builder's COPY sources cover the Python package, every Rust crate of the workspace and the
    files maturin reads, and docker/Dockerfile.dockerignore lets each of them into the context."""
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("not a checkout (the wheel check runs a copy of tests/): no sources to compare")
    builder, _ = _stages()
    copied: set[str] = set()
    for instruction in builder.all("COPY"):
        assert "from" not in instruction.flags
        copied.update(p.rstrip("/") for p in instruction.rest.split()[:-1])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    maturin = project["tool"]["maturin"]
    needed = {"pyproject.toml", "Cargo.toml", "Cargo.lock", project["project"]["readme"],
              maturin["python-source"], maturin["manifest-path"], *cargo["workspace"]["members"]}

    def covered(path: str) -> bool:
        return any(path == c or path.startswith(c + "/") for c in copied)

    assert not [p for p in needed if not covered(p)], (needed, copied)
    assert all((ROOT / c).exists() for c in copied), copied
    ignore = (ROOT / "docker" / "Dockerfile.dockerignore").read_text().splitlines()
    allowed = {line[1:].strip().rstrip("/") for line in ignore if line.startswith("!")}
    assert copied <= allowed, f"COPY sources the context leaves out: {copied - allowed}"
    # Built extensions of an editable install must not ride into the wheel.
    assert "**/*.so" in ignore and "**/__pycache__" in ignore
    build = " ".join(i.rest for i in builder.all("RUN"))
    assert re.search(r"maturin build [^&]*--release", build) and "--locked" in build, build


# --- the runtime stage's command, run here --------------------------------------------------------


def _image_env(r: Recipe, store: Path, home: Path) -> dict[str, str]:
    """This process's environment less what changes mindcore's behaviour, plus the image's ``ENV``
    with its paths mapped here: the venv's ``bin`` for the image's, ``store`` for the volume."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MINDCORE_", "OPENAI_")) and k not in ("FORWARDED_ALLOW_IPS", "PYTHONPATH")}
    for key, value in r.env.items():
        if key == "PATH":
            env[key] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        elif value == r.volume:
            env[key] = str(store)
        else:
            env[key] = value
    env["HOME"] = str(home)
    return env


def _resolve(argv: list[str], env: dict[str, str]) -> list[str]:
    """``argv`` with its program found on ``env``'s PATH, as the image's exec form finds it: this
    interpreter's own (its venv's ``mindcore`` script, its ``python``), so the package under test
    is the one installed here."""
    program = shutil.which(argv[0], path=env["PATH"])
    assert program and Path(program).parent == Path(sys.executable).parent, \
        f"{argv[0]} on PATH is {program}, not beside {sys.executable}"
    return [program, *argv[1:]]


def _port_of(argv: list[str], port: int) -> list[str]:
    """``argv`` with the exposed port replaced by ``port``: as an argument and inside a URL."""
    old = argv[argv.index("--port") + 1] if "--port" in argv else None
    replaced = [str(port) if a == old else a for a in argv]
    return [re.sub(r"(127\.0\.0\.1):\d+/", rf"\g<1>:{port}/", a) for a in replaced]


def _http(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=HANG) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def _json_lines(text: str) -> list[dict[str, object]]:
    lines = []
    for line in text.splitlines():
        if line.strip():
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                raise AssertionError(f"a log line that is not JSON: {line!r}") from None
            assert isinstance(value, dict) and {"ts", "level", "logger", "message"} <= value.keys(), line
            lines.append(value)
    return lines


class Served:
    """The runtime stage's command as a process, until :meth:`stop`."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.stderr: list[str] = []
        self.stdout: list[str] = []
        self.port = 0
        self._listening = threading.Event()
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._readers = [threading.Thread(target=self._read_stderr, daemon=True),
                         threading.Thread(target=self._drain, args=(self.proc.stdout, self.stdout), daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))
            found = _LISTENING.search(line)
            if found and not self._listening.is_set():
                self.port = int(found[3])
                self._listening.set()

    @staticmethod
    def _drain(stream: IO[str] | None, into: list[str]) -> None:
        assert stream is not None
        for line in stream:
            into.append(line.rstrip("\n"))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_listening(self) -> None:
        deadline = time.monotonic() + HANG  # a hang guard only: the loop ends at the log line
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None:
                self._finish_reading()
                raise AssertionError("the recipe's command exited:\n" + "\n".join(self.stderr))
            assert time.monotonic() < deadline, "no 'serving store' line:\n" + "\n".join(self.stderr)

    def stop(self) -> int:
        """SIGTERM, as ``docker stop`` sends; the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            code = self.proc.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("the server did not stop on SIGTERM:\n" + "\n".join(self.stderr)) from None
        self._finish_reading()
        return code

    def _finish_reading(self) -> None:
        for reader in self._readers:
            reader.join(HANG)


def check_serving(base_url: str, log_lines: Callable[[], list[dict[str, object]]],
                  forwarded_for: str | None) -> None:
    """What the recipe promises over HTTP: ``/health`` open, ``/api`` and ``/metrics`` behind the
    bearer token, the request id kept and named in the JSON log. With ``forwarded_for`` (a request
    from a trusted proxy's address) the log names that client."""
    status, _, body = _http(f"{base_url}/health")
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    tools = f"{base_url}/api/v1/datasets/docker-recipe/tools"
    assert _http(tools)[0] == 401
    assert _http(tools, {"Authorization": "Bearer wrong-" + TOKEN})[0] == 401
    assert _http(f"{base_url}/metrics")[0] == 401
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Request-Id": REQUEST_ID}
    if forwarded_for:
        headers["X-Forwarded-For"] = forwarded_for
    status, answered, body = _http(tools, headers)
    assert (status, json.loads(body)) == (200, {"tools": [], "has_more": False}), body
    assert answered["x-request-id"] == REQUEST_ID
    deadline = time.monotonic() + HANG  # the log line is written after the answer is sent
    while not (mine := [line for line in log_lines() if line.get("request_id") == REQUEST_ID]):
        assert time.monotonic() < deadline, "no log line with the request id"
        time.sleep(0.05)
    assert mine[0]["status"] == 200 and mine[0]["route"] == "/api/v1/datasets/{id}/tools", mine
    if forwarded_for:
        assert mine[0]["client"] == forwarded_for, mine


def test_runtime_command_runs_from_the_installed_package(tmp_path: Path) -> None:
    r = recipe()
    store, home = tmp_path / "volume", tmp_path / "home"
    home.mkdir()
    env = _image_env(r, store, home)
    env["MINDCORE_TOKEN"] = TOKEN  # docker run -e MINDCORE_TOKEN=...
    served = Served(_resolve(_port_of(r.argv, 0), env), env, cwd=home)
    try:
        served.wait_listening()
        # From 127.0.0.1, in uvicorn's default FORWARDED_ALLOW_IPS: a proxy on the host's loopback.
        check_serving(served.url, lambda: _json_lines("\n".join(served.stderr)), forwarded_for=FORWARDED_CLIENT)
        # The image's HEALTHCHECK command, run as Docker runs it, against this server.
        probe = subprocess.run(_resolve(_port_of(r.healthcheck, served.port), env), env=env, cwd=home,
                               capture_output=True, text=True, timeout=HANG)
        assert probe.returncode == 0, probe.stderr
    finally:
        code = served.stop()
    # docker stop: a shutdown that closes the app (and its store), not a kill. uvicorn re-raises
    # the SIGTERM it handled once it is done (as a container's init process, it exits 0 instead).
    assert code in (0, -signal.SIGTERM), "\n".join(served.stderr)
    lines = _json_lines("\n".join(served.stderr))
    assert any(line["message"] == "Application shutdown complete." for line in lines), served.stderr
    assert any(str(line["message"]).startswith("serving store ") for line in lines)
    assert not "".join(served.stdout).strip(), served.stdout
    # The store is the volume's folder, nothing in the working directory.
    assert store.is_dir() and any(store.iterdir())
    assert not (home / ".mindcore").exists()


def test_healthcheck_fails_with_exit_code_1_when_nothing_answers(tmp_path: Path) -> None:
    """Docker reads exit code 1 as unhealthy (2 is reserved): a port bound but not listening
    refuses the connection."""
    r = recipe()
    env = _image_env(r, tmp_path / "volume", tmp_path)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        probe = subprocess.run(_resolve(_port_of(r.healthcheck, held.getsockname()[1]), env), env=env,
                               cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert probe.returncode == 1, probe.stderr
    assert "Connection refused" in probe.stderr


# --- docker/README.md ---------------------------------------------------------------------------


def _serve_defaults() -> argparse.Namespace:
    from mindcore.server.serve import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args([])


def _nginx_example() -> str:
    blocks = re.findall(r"```nginx\n(.*?)```", DOCKER_README.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1, "docker/README.md: one nginx example"
    return str(blocks[0])


def _directive(config: str, name: str) -> list[str]:
    return [m.strip() for m in re.findall(rf"^\s*{name}\s+([^;#]+);", config, flags=re.M)]


def _seconds(value: str) -> float:
    found = re.fullmatch(r"(\d+)(ms|s|m)?", value)
    assert found, value
    return int(found[1]) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[found[2]]


def test_nginx_example_keeps_to_serve_defaults() -> None:
    defaults, config = _serve_defaults(), _nginx_example()
    size = re.fullmatch(r"(\d+)([kKmMgG]?)", _directive(config, "client_max_body_size")[0])
    assert size, config
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[size[2].lower()]
    assert int(size[1]) * factor == defaults.max_body
    assert _seconds(_directive(config, "client_header_timeout")[0]) == defaults.header_timeout
    assert _seconds(_directive(config, "client_body_timeout")[0]) == defaults.body_timeout
    # nginx must drop an idle upstream connection before mindcore closes it (else a 502 race).
    upstream = re.search(r"upstream\s+(\w+)\s*\{(.*?)\}", config, flags=re.S)
    assert upstream, config
    assert _seconds(_directive(upstream[2], "keepalive_timeout")[0]) < defaults.keep_alive
    assert re.search(rf"server\s+\S+:{recipe().port};", upstream[2])
    assert _directive(config, "proxy_pass") == [f"http://{upstream[1]}"]
    assert _directive(config, "proxy_http_version") == ["1.1"]
    headers = dict(h.split(None, 1) for h in _directive(config, "proxy_set_header"))
    assert headers["Connection"] == '""' and "X-Request-Id" in headers and "X-Forwarded-For" in headers


def test_readme_docker_commands_use_the_image_port_and_volume() -> None:
    r, text = recipe(), DOCKER_README.read_text(encoding="utf-8")
    runs = re.findall(r"docker run (?:[^\n]*\\\n)*[^\n]*", text)
    served = [run for run in runs if "MINDCORE_TOKEN" in run]
    assert served, "docker/README.md: no docker run with MINDCORE_TOKEN"
    for run in served:
        assert f":{r.volume}" in run, run
        assert "-p " not in run or f"-p 127.0.0.1:{r.port}:{r.port}" in run, run


# --- the image itself, where a Docker engine runs -------------------------------------------------


def _docker_engine() -> str | None:
    """Why the image cannot be built here, or None when ``docker info`` succeeds."""
    if shutil.which("docker") is None:
        return "no docker command"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "docker info did not answer"
    lines = (info.stderr or info.stdout).strip().splitlines()
    return None if info.returncode == 0 else f"docker info failed: {lines[-1] if lines else info.returncode}"


def _docker(*args: str, timeout: float = HANG) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"docker {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_image_builds_and_serves_where_docker_runs() -> None:
    reason = _docker_engine()
    if reason is not None:
        pytest.skip(f"no Docker engine ({reason}): the runtime command was run without one above")
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("not a checkout: the image builds from the repository's sources")
    r = recipe()
    tag = f"mindcore-recipe-test:{uuid.uuid4().hex[:12]}"
    # A release build of the Rust core: far longer than HANG on a small machine.
    _docker("build", "-f", str(DOCKERFILE), "-t", tag, str(ROOT), timeout=3 * 3600)
    container = ""
    try:
        container = _docker("run", "-d", "-e", f"MINDCORE_TOKEN={TOKEN}", "-p", f"127.0.0.1::{r.port}",
                            tag).strip()
        host_port = _docker("port", container, f"{r.port}/tcp").split()[0].rsplit(":", 1)[1]
        base_url = f"http://127.0.0.1:{host_port}"
        deadline = time.monotonic() + HANG
        while True:
            try:
                if _http(f"{base_url}/health")[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline, _docker("logs", container)
            time.sleep(0.2)
        # Requests reach the container from the bridge's gateway, not a trusted proxy address.
        check_serving(base_url, lambda: _json_lines(_docker_logs(container).stderr), forwarded_for=None)
        user = _docker("exec", container, "id", "-u").strip()
        assert user == r.user.split(":")[0]
        deadline = time.monotonic() + 2 * HANG  # the first health check runs after --interval
        while _docker("inspect", "--format", "{{.State.Health.Status}}", container).strip() != "healthy":
            assert time.monotonic() < deadline, _docker("inspect", container)
            time.sleep(1)
        _docker("stop", container)
        # 0 as the container's init process; 143 (SIGTERM) under an init such as docker run --init;
        # never 137, the SIGKILL of a server that outlived docker stop's grace period.
        assert _docker("inspect", "--format", "{{.State.ExitCode}}", container).strip() in ("0", "143")
        logs = _docker_logs(container)
        assert any(line.get("request_id") == REQUEST_ID for line in _json_lines(logs.stderr))
        assert not logs.stdout.strip(), logs.stdout
    finally:
        if container:
            subprocess.run(["docker", "rm", "-f", "-v", container], capture_output=True, timeout=HANG)
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=HANG)


def _docker_logs(container: str) -> subprocess.CompletedProcess[str]:
    """The container's stdout and stderr, apart."""
    return subprocess.run(["docker", "logs", container], capture_output=True, text=True, timeout=HANG)
