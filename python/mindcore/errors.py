"""Every error mindcore raises on purpose, under one root: catch :class:`MindcoreError` once.

The specific classes keep their builtin bases (``ValueError``, ``TimeoutError``, ...), so code
that caught those before still does. Each class is also importable from the package it concerns
(``mindcore.store.StoreError``, ``mindcore.working.WorkingMemoryError``, ...): they are the same
objects.

>>> from mindcore.errors import MindcoreError, LockTimeoutError
>>> issubclass(LockTimeoutError, MindcoreError) and issubclass(LockTimeoutError, TimeoutError)
True
"""

from __future__ import annotations

__all__ = [
    "ConsciousnessError",
    "ContextError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "ExtractionParseError",
    "InboxError",
    "InvalidInputError",
    "InvalidMessageError",
    "InvalidTypeError",
    "KernelError",
    "KernelTypeError",
    "LLMError",
    "LockTimeoutError",
    "MemoryNotFoundError",
    "MergeError",
    "MindError",
    "MindcoreError",
    "NotFoundError",
    "ReadOnlyError",
    "SchemaError",
    "ScriptExhaustedError",
    "SecretRefusedError",
    "StoreError",
    "StoreNotWritableError",
    "ToolError",
    "ToolNameClashError",
    "UnknownResourceError",
    "UnsupportedStrategyError",
    "WorkingMemoryError",
]


class MindcoreError(Exception):
    """The root of every error mindcore raises on purpose."""


class InvalidInputError(MindcoreError, ValueError):
    """An argument is the wrong type or out of range (a bool where a number belongs, a lone
    surrogate in text, a NaN in a vector). The message names the argument and the value."""


class InvalidTypeError(InvalidInputError, TypeError):
    """An argument is of the wrong type (a str where a bool belongs, an object that cannot
    embed passed as the embedder). Both a ``ValueError`` and a ``TypeError``, so code that caught
    either before still does."""


class KernelError(InvalidInputError):
    """A kernel (``mindcore.kernels``) refused a value: a bad shape, a NaN, a dimension mismatch,
    an argument out of range. The message names the argument."""


class KernelTypeError(KernelError, TypeError):
    """A kernel (``mindcore.kernels``) was given a value of the wrong type (a list where a numpy
    array belongs, a float32 array where int64 is needed, a str where a list of str is). The
    message names the argument and the type expected. Both a ``ValueError`` (a
    :class:`KernelError`: catch that once for every input a kernel refuses) and a ``TypeError``,
    so code that caught either before still does."""


class SecretRefusedError(MindcoreError, ValueError):
    """Text was not stored because it looks like a secret or personal data the policy refuses; the
    message names the field and the rule. Nothing was written."""


# --- storage ---


class StoreError(MindcoreError):
    """Base class of every error the store raises on purpose."""


class SchemaError(StoreError, ValueError):
    """A table's stored schema and the one asked for cannot be reconciled (a column changed type,
    or a new column is not nullable)."""


class EmbedderMismatchError(StoreError, ValueError):
    """The store (or a table) was built with another embedding model or dimension."""


class LockTimeoutError(StoreError, TimeoutError):
    """Another writer held a table's write lock for longer than the configured timeout."""


class StoreNotWritableError(StoreError, PermissionError):
    """The store cannot be written (opened ``read_only=True``, or the process lacks permission):
    raised when a capability opens, not after its writes were accepted."""


# --- models ---


class EmbeddingError(MindcoreError, RuntimeError):
    """An embedding model or endpoint failed, or returned vectors that cannot be used.

    The message names the model or endpoint and the cause; the original exception, if any, is
    chained as ``__cause__``.
    """


class LLMError(MindcoreError, RuntimeError):
    """A language model call failed. The message names the endpoint (or client) and the cause;
    the original exception, if any, is chained as ``__cause__``."""


class ScriptExhaustedError(LLMError):
    """A scripted LLM was called more times than it has replies."""


# --- tools ---


class ToolError(MindcoreError):
    """Raised by a handler (or argument checks) for a problem the model should read and fix."""


class ToolNameClashError(MindcoreError, ValueError):
    """Two tools (or a tool and an alias) would answer to the same name in one
    :class:`~mindcore.toolspec.Toolset`. The message names the tool."""


# --- capabilities ---


class MindError(MindcoreError, ValueError):
    """A request the mind refuses (bad argument, cap reached, unknown id). Tool calls return it
    to the model as ``{"status": "error", "error": ...}``; the store is left untouched."""


class WorkingMemoryError(MindcoreError, ValueError):
    """An update was rejected; the message says why and the stored state is unchanged."""


class ReadOnlyError(WorkingMemoryError):
    """A write was attempted on a ``read_only=True`` working memory."""


class MergeError(MindcoreError, ValueError):
    """A working-memory update cannot be merged (too deep, or a non-string key)."""


class MemoryNotFoundError(MindcoreError, KeyError):
    """Long-term memory was asked for a memory its scope does not hold, live or retired (an
    unknown id, another user's or scope's memory, or one that was forgotten). The message names
    the id and the scope; nothing was written."""

    def __str__(self) -> str:
        # KeyError's own str() is the repr of its argument: quoted, with escapes. This error is
        # printed to people (the command line prints it as one line), so it reads as written.
        return str(self.args[0]) if self.args else ""


class ExtractionParseError(MindcoreError, ValueError):
    """The extraction LLM's reply holds no usable JSON list of memories; nothing is stored."""


class InvalidMessageError(InvalidInputError):
    """A chat message is malformed: an unknown role, a tool call without an id or with arguments
    that are not a JSON object, a tool result no call asked for. The message names the item."""


class InboxError(InvalidInputError):
    """An inbox refused an event or an argument (no ``kind``, not JSON, too big, a bad agent name
    or event id); the message names the field and the fix. Nothing was stored."""


class ConsciousnessError(MindcoreError, ValueError):
    """A consciousness (``mindcore.consciousness``) refused a message, an option or an agent id:
    an unknown role, a tool message answering no call, tool arguments that are not JSON, a
    strategy it does not know. The message names the field and the value; nothing was saved."""


class ContextError(MindcoreError, ValueError):
    """Context assembly (``mindcore.context``) refused a request: a bad tool, message, strategy,
    limit or id. The message names the field and the value; nothing was stored."""


class NotFoundError(ContextError, LookupError):
    """Context assembly was asked for something that does not exist (an unknown ``turn_id``)."""


class UnsupportedStrategyError(ContextError):
    """A strategy the context cannot run as configured: ``compacted`` needs an LLM or a
    compaction callable."""


# --- servers ---


class UnknownResourceError(InvalidInputError, LookupError):
    """A server was asked for a resource it does not serve (an unknown ``mindcore://`` URI). The
    message names the URI and lists the ones it serves."""
