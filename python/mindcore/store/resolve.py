"""`resolve_store`: how every capability reads its first argument, a store or where one lives,
and refuses, when it opens, a store it could not write to."""

from __future__ import annotations

import os

from mindcore.errors import InvalidInputError
from mindcore.store.store import Store, open

__all__ = ["StoreLike", "resolve_store"]

#: What a capability accepts as its store: an open :class:`Store`, or what :func:`mindcore.open` takes.
StoreLike = Store | str | os.PathLike[str]


def resolve_store(store: StoreLike | None, *, writes: bool = True, name: str = "store") -> Store:
    """``store`` itself when it is a :class:`Store`, else :func:`mindcore.open` of it: a folder,
    ``memory://name``, an object-storage URI, or ``None`` for the default store
    (``$MINDCORE_HOME``). Anything else raises :class:`~mindcore.errors.InvalidInputError` naming
    the argument (``name``).

    ``writes=True`` (a capability that will write) checks the store is writable now, raising
    :class:`~mindcore.errors.StoreNotWritableError` (a read-only store, no permission): a write a
    tool accepted must never fail later for that reason.

    A caller that got a path owns the store it opened (``resolve_store(x) is not x``) and
    closes it when it closes.

    >>> import mindcore
    >>> store = mindcore.open("memory://resolve-doc")
    >>> resolve_store(store) is store, resolve_store("memory://resolve-doc") is store
    (True, True)
    >>> resolve_store(42)
    Traceback (most recent call last):
    ...
    mindcore.errors.InvalidInputError: store: expected a Store, a path or a URI, got int
    """
    if isinstance(store, Store):
        resolved = store
    elif store is None or isinstance(store, str | os.PathLike):
        # A reader opens folders and object storage read-only; memory:// has no such mode.
        in_memory = str(store).startswith("memory://")
        resolved = open(store, read_only=not writes and not in_memory)
    else:
        raise InvalidInputError(f"{name}: expected a Store, a path or a URI, got {type(store).__name__}")
    if writes:
        try:
            resolved.check_writable()
        except BaseException:
            if resolved is not store:
                resolved.close()
            raise
    return resolved
