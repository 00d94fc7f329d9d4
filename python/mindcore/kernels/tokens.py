"""Token counting: the seeds' cheap estimators and exact BPE counts equal to tiktoken's.

The exact functions give, for every input, what tiktoken's ``encode_ordinary`` gives for
``o200k_base`` (GPT-4o and later) and ``cl100k_base`` (GPT-4, GPT-3.5): special tokens such as
``<|endoftext|>`` are counted as plain text. OpenAI's rank tables are compiled into the native
module, so nothing is downloaded. Lists are counted in parallel with the GIL released.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, overload

import mindcore._core as _core
from mindcore.errors import KernelTypeError

__all__ = [
    "ENCODINGS",
    "Encoding",
    "EstimateRule",
    "count_tokens",
    "decode",
    "encode",
    "estimate_message_tokens",
    "estimate_tokens",
]

Encoding = Literal["o200k_base", "cl100k_base"]
EstimateRule = Literal["chars", "bytes"]
ENCODINGS: tuple[Encoding, ...] = ("o200k_base", "cl100k_base")


def _without_surrogates(text: str) -> str:
    # What tiktoken does with a str that is not valid Unicode: pair up surrogates, replace lone ones.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _as_list(texts: object, arg: str) -> list[str] | tuple[str, ...]:
    """A list/tuple as is; any other iterable materialised (so it can be retried)."""
    if isinstance(texts, list | tuple):
        return texts
    if isinstance(texts, str | bytes | bytearray) or not isinstance(texts, Iterable):
        raise KernelTypeError(f"{arg}: expected str or a sequence of str, got {type(texts).__name__}")
    return list(texts)


@overload
def estimate_tokens(text_or_texts: str, rule: EstimateRule = "chars") -> int: ...  # type: ignore[overload-overlap]
@overload
def estimate_tokens(text_or_texts: Iterable[str], rule: EstimateRule = "chars") -> list[int]: ...
def estimate_tokens(text_or_texts: str | Iterable[str], rule: EstimateRule = "chars") -> int | list[int]:
    """Cheap token estimate of a text (int) or of each text of a sequence (list of int).

    * ``"chars"``: ``ceil(len(text) / 4)`` with ``len`` in code points (the Agent Mind rule).
    * ``"bytes"``: ``floor(len(text.encode("utf-8")) / 4)`` (the context server's rule); a lone
      surrogate, which UTF-8 cannot encode, counts 3 bytes (as ``"surrogatepass"`` encodes it).

    Lengths are read from the str objects without encoding them.

    Raises
    ------
    KernelError
        An unknown ``rule``.
    KernelTypeError
        An input that is not a str or a sequence of str.

    Examples
    --------
    >>> estimate_tokens("hello world")
    3
    >>> estimate_tokens(["hello world", "héllo wörld"], rule="bytes")
    [2, 3]
    """
    if isinstance(text_or_texts, str):
        return _core.estimate_tokens(text_or_texts, rule)
    return _core.estimate_tokens_batch(_as_list(text_or_texts, "text_or_texts"), rule)


def estimate_message_tokens(texts: Iterable[str]) -> int:
    """Consciousness' estimate for a list of messages: ``ceil((sum of chars + 20 * len(texts)) / 4)``.

    Characters are code points; the 20 per message stand for role and framing overhead.

    Raises
    ------
    KernelTypeError
        ``texts`` is a str (wrap it in a list) or holds something that is not a str.

    Examples
    --------
    >>> estimate_message_tokens(["Hi!", "How can I help?"])
    15
    >>> estimate_message_tokens([])
    0
    """
    return _core.estimate_message_tokens(_as_list(texts, "texts"))


@overload
def count_tokens(text_or_texts: str, encoding: Encoding = "o200k_base") -> int: ...  # type: ignore[overload-overlap]
@overload
def count_tokens(text_or_texts: Iterable[str], encoding: Encoding = "o200k_base") -> list[int]: ...
def count_tokens(text_or_texts: str | Iterable[str], encoding: Encoding = "o200k_base") -> int | list[int]:
    """Exact token count of a text (int) or of each text of a sequence (list of int, in parallel).

    Equal to ``len(tiktoken.get_encoding(encoding).encode_ordinary(text))`` for every input.

    Raises
    ------
    KernelError
        An unknown ``encoding`` (the message lists the supported ones).
    KernelTypeError
        An input that is not a str or a sequence of str.

    Examples
    --------
    >>> count_tokens("Hello, world!")
    4
    >>> count_tokens(["Hello, world!", "tiktoken is great!"], encoding="cl100k_base")
    [4, 6]
    """
    if isinstance(text_or_texts, str):
        try:
            return _core.count_tokens(text_or_texts, encoding)
        except UnicodeEncodeError:
            return _core.count_tokens(_without_surrogates(text_or_texts), encoding)
    texts = _as_list(text_or_texts, "text_or_texts")
    try:
        return _core.count_tokens_batch(texts, encoding)
    except UnicodeEncodeError:
        fixed = [_without_surrogates(t) if isinstance(t, str) else t for t in texts]
        return _core.count_tokens_batch(fixed, encoding)


def encode(text: str, encoding: Encoding = "o200k_base") -> list[int]:
    """Token ids of ``text``, equal to tiktoken's ``encode_ordinary``.

    Raises
    ------
    KernelError
        An unknown ``encoding``.
    KernelTypeError
        ``text`` is not a str.

    Examples
    --------
    >>> encode("Hello, world!")
    [13225, 11, 2375, 0]
    >>> encode("<|endoftext|>", encoding="cl100k_base")  # special tokens are plain text
    [27, 91, 8862, 728, 428, 91, 29]
    """
    if not isinstance(text, str):
        raise KernelTypeError(f"text: expected str, got {type(text).__name__}")
    try:
        return _core.encode_tokens(text, encoding)
    except UnicodeEncodeError:
        return _core.encode_tokens(_without_surrogates(text), encoding)


def decode(ids: Sequence[int], encoding: Encoding = "o200k_base") -> str:
    """The text of token ids, like tiktoken's ``decode``.

    Bytes that do not form valid UTF-8 (a sequence cut inside a character) become U+FFFD.
    Special token ids (e.g. ``<|endoftext|>``) decode to their text.

    Raises
    ------
    KernelError
        An id that is not a token of the encoding, or an unknown ``encoding``.
    KernelTypeError
        ``ids`` is not a sequence of int.

    Examples
    --------
    >>> decode([13225, 11, 2375, 0])
    'Hello, world!'
    >>> decode(encode("naïve café"))
    'naïve café'
    """
    if isinstance(ids, str | bytes | bytearray):
        raise KernelTypeError(f"ids: expected a sequence of int, got {type(ids).__name__}")
    return _core.decode_tokens(ids, encoding)
