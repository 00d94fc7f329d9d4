"""OpenTelemetry spans around what a user would trace: recall, discovery, context assembly and
writes. With ``pip install 'mindcore[otel]'`` (``opentelemetry-api``) they go to whatever tracer
provider the application configured; without it, or with no provider set, :func:`span` costs a
function call.

Spans are named ``mindcore.<operation>`` (``mindcore.ltm.recall``, ``mindcore.context.discover``,
...) and carry only identifiers and counts as attributes, never stored text: a trace backend is
one more place a user's data must not leak to.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

__all__ = ["span"]

AttributeValue = str | int | float | bool


@functools.cache
def _tracer() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    from mindcore._core import __version__

    return trace.get_tracer("mindcore", __version__)


@contextlib.contextmanager
def span(name: str, **attributes: AttributeValue | None) -> Iterator[None]:
    """A span ``mindcore.<name>`` around the ``with`` block (its attributes prefixed
    ``mindcore.``; values that are not a string, number or bool left out), recording an exception that escapes it."""
    tracer = _tracer()
    if tracer is None:
        yield
        return
    attrs = {f"mindcore.{k}": v for k, v in attributes.items() if isinstance(v, str | int | float | bool)}
    with tracer.start_as_current_span(f"mindcore.{name}", attributes=attrs):
        yield
