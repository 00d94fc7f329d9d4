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
import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar, cast

__all__ = ["span", "traced"]

AttributeValue = str | int | float | bool
F = TypeVar("F", bound=Callable[..., Any])
#: How :func:`traced` finds an attribute: a parameter's name, or a function of the call's arguments
#: (by parameter name, ``self`` included, defaults filled in).
Attribute = str | Callable[[dict[str, Any]], AttributeValue | None]


@functools.cache
def _otel_trace() -> Any:
    """OpenTelemetry's ``trace`` module, or None when it is not installed."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


_active: list[Any] = []  # the tracer, once the application has set a tracer provider


def _tracer() -> Any:
    """mindcore's tracer once the application has set a tracer provider, else None: before that,
    OpenTelemetry's proxy would make spans that record nothing, at some microseconds each."""
    if _active:
        return _active[0]
    trace = _otel_trace()
    if trace is None or isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None
    from mindcore._core import __version__

    _active.append(trace.get_tracer("mindcore", __version__))
    return _active[0]


_NO_SPAN: AbstractContextManager[None] = contextlib.nullcontext()


def span(name: str, **attributes: AttributeValue | None) -> AbstractContextManager[Any]:
    """A span ``mindcore.<name>`` around the ``with`` block (its attributes prefixed
    ``mindcore.``; values that are not a string, number or bool left out), recording an exception
    that escapes it. Without a tracer: a shared no-op context."""
    tracer = _tracer()
    if tracer is None:
        return _NO_SPAN
    attrs = {f"mindcore.{k}": v for k, v in attributes.items() if isinstance(v, str | int | float | bool)}
    cm: AbstractContextManager[Any] = tracer.start_as_current_span(f"mindcore.{name}", attributes=attrs)
    return cm


def traced(name: str, **attributes: Attribute) -> Callable[[F], F]:
    """Run every call of the decorated function in :func:`span` ``name``, with ``attributes``
    taken from the call: a string names a parameter whose value is the attribute; a function gets
    the call's arguments. With no tracer the call goes straight through.

    >>> class Shelf:
    ...     size = 3
    ...     @traced("shelf.find", limit="limit", size=lambda call: call["self"].size)
    ...     def find(self, query: str, limit: int = 5) -> str:
    ...         return query[:limit]
    >>> Shelf().find("memory", limit=3)
    'mem'
    """

    def decorate(function: F) -> F:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            if _tracer() is None:
                return function(*args, **kwargs)
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:  # the function itself reports the bad call
                return function(*args, **kwargs)
            bound.apply_defaults()
            given = bound.arguments
            values = {key: given.get(how) if isinstance(how, str) else how(given) for key, how in attributes.items()}
            with span(name, **values):
                return function(*args, **kwargs)

        return cast(F, call)

    return decorate
