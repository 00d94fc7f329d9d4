"""``mindcore serve`` as a real process for tests: started on a free port (read back from its log
line), ready once ``/health`` answers, its output kept for the test to read after it stops."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

import httpx

import mindcore

PACKAGE_ROOT = Path(mindcore.__file__).resolve().parents[1]
_LISTENING = re.compile(r"serving store \S+ on (http://[^\s\"]+)")


class ServeProcess:
    """``python -m mindcore serve --port 0 --store STORE ARGS`` until the ``with`` block ends."""

    def __init__(self, store: Path, *args: str) -> None:
        self.store = store
        self.args = args
        self.url = ""
        self.lines: list[str] = []
        self._proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()

    def __enter__(self) -> ServeProcess:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "mindcore", "serve", "--port", "0", "--store", str(self.store), *self.args],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)  # never leave a server behind
            raise
        return self

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + 300  # a generous bound: the loop ends as soon as it answers
        while True:
            if self._proc.poll() is not None:
                self._ready.wait(5)
                raise AssertionError("mindcore serve exited:\n" + "\n".join(self.lines))
            if self._ready.is_set():
                try:
                    if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
            assert time.monotonic() < deadline, "mindcore serve did not start:\n" + "\n".join(self.lines)
            time.sleep(0.05)

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines.append(line.rstrip("\n"))
            found = _LISTENING.search(line)
            if found and not self._ready.is_set():
                self.url = found.group(1)
                self._ready.set()

    @property
    def host_port(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        return host, int(port)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        assert self._proc is not None
        self._proc.terminate()
        try:
            self._proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)
