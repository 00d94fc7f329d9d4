"""Knowing a table's latest version cheaply, so every read sees every committed write.

LanceDB's own consistency check (``read_consistency_interval=0``) lists the table's
``_versions`` folder on every read: with the thousands of versions kept during the cleanup grace
period after a burst of small writes, that listing alone made reads several times slower. For
local folders the store instead probes the version files directly: LanceDB writes
``_versions/latest_version_hint.json`` at each commit and names manifests by version, and
versions are consecutive, so "the hint's manifest exists and the next one does not" proves the
latest version with two ``stat`` calls. The LanceDB table object is reloaded only when that
version moved. If the layout is not recognised the tracker falls back to LanceDB's check.

Object storage keeps LanceDB's check, at most once per ``read_consistency`` interval (a listing
there is a network round trip); ``memory://`` stores have a single writer, this process.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

__all__ = ["VersionTracker"]

_U64_MAX = 2**64 - 1


class VersionTracker:
    """The latest version of one table, and its LanceDB object kept checked out at it."""

    def __init__(self, lance: Any, kind: str, table_dir: str | None, interval: float | None) -> None:
        self._lance = lance
        self.kind = kind
        self.interval = interval
        self.loaded = int(lance.version)
        self._checked_at = time.monotonic()
        self._lock = threading.Lock()
        self._vdir = os.path.join(table_dir, "_versions") if kind == "local" and table_dir else None
        self._v2: bool | None = None
        self._hint_sig: tuple[int, int, int] | None = None
        self._hint_value = 0
        if self._vdir is not None:
            if os.path.exists(self._manifest(self.loaded, True)):
                self._v2 = True
            elif os.path.exists(self._manifest(self.loaded, False)):
                self._v2 = False

    def reset(self, lance: Any) -> None:
        """Track a new LanceDB object for the same table."""
        with self._lock:
            self._lance = lance
            self.loaded = int(lance.version)

    def _manifest(self, version: int, v2: bool) -> str:
        assert self._vdir is not None
        name = f"{_U64_MAX - version:020d}.manifest" if v2 else f"{version}.manifest"
        return os.path.join(self._vdir, name)

    def _probe(self) -> int | None:
        """The latest version from the version files, or ``None`` if they cannot tell."""
        if self._vdir is None or self._v2 is None:
            return None
        v = max(self._hint(), self.loaded)
        if not os.path.exists(self._manifest(v, self._v2)):
            return None
        while os.path.exists(self._manifest(v + 1, self._v2)):
            v += 1
        return v

    def _hint(self) -> int:
        """The version in LanceDB's hint file (re-read only when the file was replaced)."""
        assert self._vdir is not None
        path = os.path.join(self._vdir, "latest_version_hint.json")
        try:
            st = os.stat(path)
        except OSError:
            return 0
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        if sig != self._hint_sig:
            try:
                with open(path, "rb") as f:
                    self._hint_value = int(json.loads(f.read())["version"])
            except (OSError, ValueError, KeyError, TypeError):
                return 0
            self._hint_sig = sig
        return self._hint_value

    def _reload(self) -> int:
        self._lance.checkout_latest()
        self.loaded = int(self._lance.version)
        self._checked_at = time.monotonic()
        return self.loaded

    def current(self) -> int:
        """Make the table object current (within the interval on object storage); its version."""
        with self._lock:
            if self.kind == "memory":
                return self.loaded
            if self.kind == "local":
                latest = self._probe()
                if latest is None or latest != self.loaded:
                    return self._reload()
                return self.loaded
            if self.interval is not None and time.monotonic() - self._checked_at < self.interval:
                return self.loaded
            return self._reload()

    def exact(self) -> int:
        """Like :meth:`current` but never stale: for writers holding the table's lock."""
        with self._lock:
            if self.kind == "memory":
                return self.loaded
            if self.kind == "local":
                latest = self._probe()
                if latest is not None and latest == self.loaded:
                    return self.loaded
            return self._reload()

    def committed(self, version: int) -> None:
        """This process's commit produced ``version`` (the table object is already there)."""
        with self._lock:
            self.loaded = version
            self._checked_at = time.monotonic()
