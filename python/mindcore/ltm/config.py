"""Opt-in and size settings, resolved from arguments and the environment.

Long-term memory is a trust boundary, so it is off unless someone turns it on:

* ``enabled=False`` is a veto, whatever the environment says;
* ``MINDCORE_MEMORY_ENABLED`` = ``0``/``false``/``no``/``off`` is a global veto, even over ``enabled=True``;
* ``enabled=True`` or ``MINDCORE_MEMORY_ENABLED`` = ``1``/``true``/``yes``/``on`` turns it on;
* with neither, it stays off.

>>> resolve_enabled(None, env={"MINDCORE_MEMORY_ENABLED": "yes"})
True
>>> resolve_enabled(True, env={"MINDCORE_MEMORY_ENABLED": "0"})
False
>>> resolve_max_items(None, env={"MINDCORE_MEMORY_MAX_ITEMS": "0"})
0
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

__all__ = ["DEFAULT_MAX_ITEMS", "ENV_ENABLED", "ENV_MAX_ITEMS", "resolve_enabled", "resolve_max_items"]

log = logging.getLogger("mindcore.ltm")

ENV_ENABLED = "MINDCORE_MEMORY_ENABLED"
ENV_MAX_ITEMS = "MINDCORE_MEMORY_MAX_ITEMS"
DEFAULT_MAX_ITEMS = 500

_TRUTHY = frozenset({"1", "true", "yes", "on"})
_FALSY = frozenset({"0", "false", "no", "off"})


def resolve_enabled(enabled: bool | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether long-term memory is on for a session (see the module docstring for the rules).

    An unrecognised value of ``MINDCORE_MEMORY_ENABLED`` is logged and treated as unset: a typo must
    not switch memory on.
    """
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"enabled: expected True, False or None, got {type(enabled).__name__}")
    if enabled is False:
        return False
    raw = (os.environ if env is None else env).get(ENV_ENABLED, "").strip().lower()
    if raw in _FALSY:
        return False
    if enabled is True or raw in _TRUTHY:
        return True
    if raw:
        log.warning("%s=%r is not one of 1/true/yes/on or 0/false/no/off; treating it as unset", ENV_ENABLED, raw)
    return False


def resolve_max_items(max_items: int | None, env: Mapping[str, str] | None = None) -> int:
    """The per-collection cap: the argument, else ``MINDCORE_MEMORY_MAX_ITEMS``, else 500; 0 disables eviction."""
    if max_items is None:
        raw = (os.environ if env is None else env).get(ENV_MAX_ITEMS, "").strip()
        if not raw:
            return DEFAULT_MAX_ITEMS
        try:
            max_items = int(raw)
        except ValueError:
            raise ValueError(f"{ENV_MAX_ITEMS}: expected a non-negative integer, got {raw!r}") from None
        source = ENV_MAX_ITEMS
    else:
        source = "max_items"
    if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
        raise ValueError(f"{source}: expected a non-negative integer (0 disables eviction), got {max_items!r}")
    return max_items
