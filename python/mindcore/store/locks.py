"""Locks shared by every thread, process and machine using one store (``Store.lock(name)``).

Every table write holds the lock named after the table: one writer per table at a time.
LanceDB commits are atomic, but two processes upserting the same *new* id can both insert it (a
merge on a table with a scalar index does not see the other's uncommitted insert). Holding the
table's lock around every read-modify-write makes that impossible:

* local folders: ``fcntl.flock`` on ``<root>/_mindcore_locks/<table>.lock`` (released by the OS
  if the holder dies, so a ``kill -9`` never leaves a stale lock);
* object storage (``s3://``, ``gs://``, ``az://``): a lease object written with a
  create-if-absent / replace-if-unchanged put (obstore), renewed while held and taken over by
  others once it expires (``ttl``), so a dead holder blocks writers for at most ``ttl``;
* ``memory://``: a thread lock (the data lives in this process only).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from mindcore.store.errors import LockTimeoutError

__all__ = ["DEFAULT_TIMEOUT", "FileLock", "LeaseLock", "Lock", "TableLock", "ThreadLock"]

#: Seconds ``hold()`` waits when no timeout is given (``StoreConfig.lock_timeout`` for a store's locks).
DEFAULT_TIMEOUT = 60.0


class Lock(Protocol):
    """An exclusive lock shared by every thread and process using one store (see ``Store.lock``)."""

    @property
    def name(self) -> str: ...

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        """Context manager holding the lock; raises :class:`LockTimeoutError` if it is not acquired
        within ``timeout`` seconds (default: the timeout the lock was made with)."""
        ...


#: The write lock of one table is a :class:`Lock` named after the table.
TableLock = Lock


def _label(name: str, label: str | None) -> str:
    return f"table {name!r}" if label is None else label


class ThreadLock:
    """In-process lock (``memory://`` stores)."""

    def __init__(self, name: str, *, label: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.name = name
        self.label = _label(name, label)
        self.timeout = timeout
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        timeout = self.timeout if timeout is None else timeout
        if not self._lock.acquire(timeout=timeout):
            raise LockTimeoutError(f"{self.label}: write lock not acquired within {timeout:g}s")
        try:
            yield
        finally:
            self._lock.release()


class FileLock:
    """``flock`` on a lock file, plus a thread lock so threads of one process queue up cheaply."""

    def __init__(self, path: str, name: str, *, label: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        import fcntl  # noqa: F401  (POSIX only; fail at open time, not at first write)

        self.path = path
        self.name = name
        self.label = _label(name, label)
        self.timeout = timeout
        self._thread = threading.Lock()

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        import fcntl

        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        if not self._thread.acquire(timeout=timeout):
            raise LockTimeoutError(f"{self.label}: write lock not acquired within {timeout:g}s")
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                delay = 0.001
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise LockTimeoutError(
                                f"{self.label}: write lock {self.path} held by another process "
                                f"for more than {timeout:g}s"
                            ) from None
                        time.sleep(delay)
                        delay = min(delay * 2, 0.05)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        finally:
            self._thread.release()


class LeaseLock:
    """A lease on an object-store key, taken with conditional puts.

    Acquire: create the key if absent, or replace it (if unchanged since read) once its lease has
    expired. While held, a thread renews the lease every ``ttl / 3``. Release: overwrite it with
    an already-expired lease (object stores have no conditional delete), which the next writer
    takes over at once. Relies on clocks agreeing to well within ``ttl``.
    """

    def __init__(
        self, url: str, key: str, name: str, options: Mapping[str, str], *, ttl: float = 30.0,
        label: str | None = None, timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            import obstore
            from obstore.store import from_url
        except ImportError as e:  # pragma: no cover - the extra is part of the test deps
            raise ImportError(
                "writing to an object-storage store needs obstore for its write lock: "
                "pip install 'mindcore[cloud]'"
            ) from e
        self._obs: Any = obstore
        config, client = _split_options(options)
        self._store: Any = from_url(url, config=config, client_options=client)  # type: ignore[call-overload]
        self.key = key
        self.name = name
        self.label = _label(name, label)
        self.timeout = timeout
        self.ttl = ttl
        self._thread = threading.Lock()

    def _lease(self, owner: str, expires_ms: int) -> bytes:
        return json.dumps({"owner": owner, "expires_ms": expires_ms}).encode()

    def _try_acquire(self, owner: str) -> str | None:
        """One attempt; returns the e-tag of our lease or ``None`` if someone else holds it."""
        obs = self._obs
        now = time.time_ns() // 1_000_000
        lease = self._lease(owner, now + int(self.ttl * 1000))
        try:
            res = obs.put(self._store, self.key, lease, mode="create")
            return str(res["e_tag"])
        except obs.exceptions.AlreadyExistsError:
            pass
        try:
            got = obs.get(self._store, self.key)
        except FileNotFoundError:
            return None  # deleted under us: retry the create
        etag = got.meta["e_tag"]
        try:
            held = json.loads(bytes(got.bytes()))
            expires = int(held["expires_ms"])
        except (ValueError, KeyError, TypeError):
            expires = 0  # unreadable lease: treat as expired
        if expires > now:
            return None
        try:
            res = obs.put(self._store, self.key, lease, mode={"e_tag": etag})
            return str(res["e_tag"])
        except obs.exceptions.PreconditionError:
            return None

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        if not self._thread.acquire(timeout=timeout):
            raise LockTimeoutError(f"{self.label}: write lock not acquired within {timeout:g}s")
        try:
            owner = uuid.uuid4().hex
            delay = 0.01
            while (etag := self._try_acquire(owner)) is None:
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"{self.label}: lease {self.key} held by another writer for more than {timeout:g}s"
                    )
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
            state = {"etag": etag, "lost": False}
            stop = threading.Event()
            renewer = threading.Thread(target=self._renew, args=(owner, state, stop), daemon=True)
            renewer.start()
            try:
                yield
            finally:
                stop.set()
                renewer.join()
                if not state["lost"]:
                    # PreconditionError: someone took over an expired lease; nothing of ours to release.
                    with contextlib.suppress(self._obs.exceptions.PreconditionError):
                        self._obs.put(self._store, self.key, self._lease(owner, 0), mode={"e_tag": state["etag"]})
        finally:
            self._thread.release()

    def _renew(self, owner: str, state: dict[str, Any], stop: threading.Event) -> None:
        while not stop.wait(self.ttl / 3):
            now = time.time_ns() // 1_000_000
            try:
                res = self._obs.put(
                    self._store, self.key, self._lease(owner, now + int(self.ttl * 1000)), mode={"e_tag": state["etag"]}
                )
                state["etag"] = res["e_tag"]
            except self._obs.exceptions.PreconditionError:
                state["lost"] = True
                return
            except OSError:
                continue  # transient: try again next period


# obstore splits HTTP-client settings from store settings; LanceDB takes both in one dict.
_CLIENT_KEYS = {
    "allow_http", "allow_invalid_certificates", "connect_timeout", "timeout", "proxy_url", "pool_idle_timeout",
    "pool_max_idle_per_host", "http1_only", "http2_only", "user_agent", "default_content_type",
}


def _split_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
    config: dict[str, str] = {}
    client: dict[str, Any] = {}
    # LanceDB reads the HTTP client's options from the environment too (AWS_ALLOW_HTTP, ...), as
    # obstore reads only credentials and endpoints there: read them alike, given options first.
    from_env = {key: os.environ[f"AWS_{key.upper()}"] for key in _CLIENT_KEYS if f"AWS_{key.upper()}" in os.environ}
    for k, v in {**from_env, **options}.items():
        key = k.lower()
        if key in _CLIENT_KEYS:
            client[key] = str(v).lower() in ("1", "true", "yes") if key.startswith(("allow_", "http")) else v
        else:
            config[key] = v
    return config, client
