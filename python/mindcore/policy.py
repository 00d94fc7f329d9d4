"""The one secret policy every write path of every capability goes through.

A :class:`SecretPolicy` scans text before it is stored and either refuses it (the default: a
:class:`~mindcore.errors.SecretRefusedError` naming the field and the rule that fired, nothing
stored) or stores it with each secret replaced by a placeholder (``action="redact"``). The rules
are the Rust scanner's (:class:`~mindcore.kernels.SecretScanner`): the built-in ones, or a scanner
of your own with extra rules.

>>> policy = SecretPolicy()
>>> policy.screen("the weather is fine", "content")
'the weather is fine'
>>> policy.screen("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "content")
Traceback (most recent call last):
...
mindcore.errors.SecretRefusedError: content: not stored: it looks like a secret (rule github-token); leave credentials out
>>> SecretPolicy(action="redact").screen("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "content")
'token [REDACTED:github-token]'

Encoded secrets are decoded before they are judged: JSON string escapes (a ``\\u``-escaped key
inside a tool call's ``arguments``), percent-encoded runs and base64 runs that decode to text.

>>> policy.screen("args: {\\"k\\": \\"\\\\u0067hp_abcdefghijklmnopqrstuvwxyz0123456789\\"}", "arguments")
Traceback (most recent call last):
...
mindcore.errors.SecretRefusedError: arguments: not stored: it looks like a secret (rule github-token in JSON-escaped text); leave credentials out

Identifiers (user ids, namespaces, thread ids, tool and agent names) are screened with
:meth:`SecretPolicy.screen_identifier`, which always refuses: an id cannot be redacted.

>>> policy.screen_identifier("thread-2024-06-01", "thread_id")
'thread-2024-06-01'
"""

from __future__ import annotations

import base64
import binascii
import bisect
import dataclasses
import functools
import json
import re
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mindcore.errors import InvalidInputError, SecretRefusedError
from mindcore.kernels.secrets import DEFAULT_PLACEHOLDER, SecretScanner, _is_utf8

__all__ = ["SecretAction", "SecretPolicy"]

SecretAction = Literal["refuse", "redact"]

#: Decoding is capped so a huge input costs a bounded amount beyond the scan itself: only the
#: first this many characters are decoded (the raw text is always scanned whole) ...
DECODE_MAX_CHARS = 1 << 20
#: ... and at most this many percent or base64 runs are decoded.
DECODE_MAX_RUNS = 256

# Every pattern below is a single character class repeated, or alternatives that start with
# different characters: Python's `re` matches them in linear time (no nested ambiguity).
_JSON_ESCAPE = re.compile(r'\\(?:u[0-9A-Fa-f]{4}|["\\/bfnrt])')
_PERCENT_RUN = re.compile(r"[^\s%]*(?:%[0-9A-Fa-f]{2}[^\s%]*)+")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
# A secret this short cannot hide in a base64 run shorter than this.
_BASE64_MIN = 16


def _unescape_json(text: str) -> str:
    """``text`` with JSON string escapes decoded (``\\u0067`` -> ``g``, surrogate pairs joined)."""

    def one(m: re.Match[str]) -> str:
        esc = m.group(0)
        if esc[1] == "u":
            return chr(int(esc[2:], 16))
        return str(json.loads(f'"{esc}"'))

    out = _JSON_ESCAPE.sub(one, text)
    # Rejoin escaped surrogate pairs (\\ud83d\\ude00) into one character.
    return out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _b64_text(run: str) -> str | None:
    """The text a base64 (or base64url) run decodes to, when it is printable UTF-8."""
    body = run.rstrip("=")
    body += "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(body, altchars=b"-_" if ("-" in body or "_" in body) else None, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(ch.isprintable() or ch in "\t\r\n" for ch in decoded)
    return decoded if decoded and printable == len(decoded) else None


# The Rust kernel makes these same forms for the bulk screen (`SecretScanner.contains_batch_decoded`,
# rust/kernels/src/secrets/decode.rs): a change to the rules here is a change there too
# (tests/test_secrets_decoded_parity.py holds the two to the same answers).
def decoded_views(text: str) -> Iterator[tuple[str, str, tuple[int, int] | None]]:
    """The decoded forms of ``text`` a secret may hide in: ``(how, decoded text, span)``, where
    ``span`` is the encoded run in ``text`` (``None`` when the whole text was decoded).

    JSON string escapes are decoded over the whole text; percent-encoded and base64 runs one by
    one (base64 only when it decodes to printable text). Work is capped by
    :data:`DECODE_MAX_CHARS` and :data:`DECODE_MAX_RUNS`.

    >>> [(how, view) for how, view, _ in decoded_views("id=%67hp%5Fabc")]
    [('percent-encoded', 'id=ghp_abc')]
    """
    head = text[:DECODE_MAX_CHARS]
    bases = [head]
    if "\\" in head:
        unescaped = _unescape_json(head)
        if unescaped != head:
            yield "JSON-escaped", unescaped, None
            bases.append(unescaped)
    runs = 0
    for base in bases:
        if "%" in base:
            for m in _PERCENT_RUN.finditer(base):
                if runs >= DECODE_MAX_RUNS:
                    return
                runs += 1
                decoded = urllib.parse.unquote(m.group(0))
                if decoded != m.group(0):
                    yield "percent-encoded", decoded, (m.start(), m.end()) if base is head else None
        for m in _BASE64_RUN.finditer(base):
            if len(m.group(0)) < _BASE64_MIN:
                continue
            if runs >= DECODE_MAX_RUNS:
                return
            runs += 1
            decoded_text = _b64_text(m.group(0))
            if decoded_text is not None:
                yield "base64", decoded_text, (m.start(), m.end()) if base is head else None


@dataclass(frozen=True)
class SecretPolicy:
    """What happens to text that looks like a secret: ``"refuse"`` it (default) or ``"redact"`` it.

    ``scanner`` defaults to the built-in rules; ``placeholder`` may use ``{rule_id}``.
    """

    action: SecretAction = "refuse"
    scanner: SecretScanner | None = None
    placeholder: str = DEFAULT_PLACEHOLDER

    def __post_init__(self) -> None:
        if self.action not in ("refuse", "redact"):
            raise InvalidInputError(f"action: expected 'refuse' or 'redact', got {self.action!r}")
        if self.scanner is not None and not isinstance(self.scanner, SecretScanner):
            raise InvalidInputError(f"scanner: expected a SecretScanner, got {type(self.scanner).__name__}")

    @property
    def _scanner(self) -> SecretScanner:
        return self.scanner if self.scanner is not None else _builtin_scanner()

    def detect(self, text: str) -> list[str]:
        """The rules ``text`` breaks, as the policy judges it: the text as written, and else its
        decoded forms (each rule id then says how it was hidden). Empty when it may be stored.

        >>> SecretPolicy().detect("note Z2hwX2FiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyMzQ1Njc4OQ== ok")
        ['github-token in base64 text']
        """
        findings = self._scanner.scan(text)
        if findings:
            return sorted({f.rule_id for f in findings})
        hidden: set[str] = set()
        for how, view, _span in decoded_views(text):
            hidden.update(f"{f.rule_id} in {how} text" for f in self._scanner.scan(view))
        return sorted(hidden)

    def contains(self, text: str) -> bool:
        """Whether the policy would refuse ``text`` (the raw text, then its decoded forms)."""
        return self._refused_each([text])[0]

    def _refused_each(self, texts: list[str]) -> list[bool]:
        """:meth:`contains` of each text: the raw text and its :func:`decoded_views` judged in
        one parallel Rust call."""
        refused = self._scanner.contains_batch_decoded(
            texts, max_chars=DECODE_MAX_CHARS, max_runs=DECODE_MAX_RUNS
        )
        joined = "".join(texts)
        if not joined.isascii() and not _is_utf8(joined):
            # The kernel reads a lone surrogate as "?"; the JSON-unescaped form pairs it with its
            # neighbours as Python's UTF-16 codec does, so those texts are also judged here.
            for i, text in enumerate(texts):
                if not refused[i] and not _is_utf8(text):
                    refused[i] = self._hidden(text)
        return refused

    def _hidden(self, text: str) -> bool:
        """Whether a decoded form of ``text`` (JSON escapes, percent or base64 runs) holds a secret,
        judged in Python: for texts with lone surrogates, and as the reference the tests hold the
        Rust path to."""
        return any(self._scanner.contains(view) for _how, view, _span in decoded_views(text))

    def screen(self, text: str, field: str) -> str:
        """``text`` as it may be stored; raises :class:`SecretRefusedError` when refusing."""
        if self.action == "redact":
            return self._redact(text)
        rules = self.detect(text)
        if not rules:
            return text
        raise SecretRefusedError(
            f"{field}: not stored: it looks like a secret (rule {', '.join(rules)}); leave credentials out"
        )

    def screen_identifier(self, value: str, field: str) -> str:
        """``value`` (an id or a name: a user id, a namespace, a thread id, a tool or agent name)
        when it holds no secret; raises :class:`SecretRefusedError` otherwise, whatever the
        action (an identifier cannot be redacted and stay the same identifier).

        >>> SecretPolicy(action="redact").screen_identifier("sk-proj-abcdefghijklmnopqrstuvwx", "user_id")
        Traceback (most recent call last):
        ...
        mindcore.errors.SecretRefusedError: user_id: not stored: it looks like a secret (rule openai-api-key); leave credentials out
        """
        rules = self.detect(value)
        if not rules:
            return value
        raise SecretRefusedError(
            f"{field}: not stored: it looks like a secret (rule {', '.join(rules)}); leave credentials out"
        )

    def _redact(self, text: str) -> str:
        """Secrets as written replaced; then each encoded run that hides one replaced whole (a
        text whose JSON escapes hide one is stored decoded, with the secret replaced)."""
        out = self._scanner.redact(text, self.placeholder)
        for _ in range(2):  # JSON escapes first, then the runs inside what they decoded to
            replaced: list[tuple[int, int, str]] = []
            for _how, view, span in decoded_views(out):
                found = self._scanner.scan(view)
                if not found:
                    continue
                if span is None:
                    out = self._scanner.redact(view, self.placeholder)
                    break
                rule = found[0].rule_id
                replaced.append((span[0], span[1], self.placeholder.replace("{rule_id}", rule)))
            else:
                if not replaced:
                    return out
                for start, end, label in sorted(replaced, reverse=True):
                    out = out[:start] + label + out[end:]
                return out
        return out

    def screen_optional(self, text: str | None, field: str) -> str | None:
        return None if text is None else self.screen(text, field)

    def screen_batch(self, texts: Sequence[str]) -> list[str | None]:
        """Each of ``texts`` as :meth:`screen` would let it be stored, ``None`` where it refuses
        (no exception): one parallel scan of them all, for bulk writes.

        >>> SecretPolicy().screen_batch(["fine", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"])
        ['fine', None]
        """
        items = list(texts)
        out: list[str | None] = list(items)
        flagged = [i for i, hit in enumerate(self._refused_each(items)) if hit]
        if flagged and self.action == "redact":
            for i in flagged:
                out[i] = self._redact(items[i])
        else:
            for i in flagged:
                out[i] = None
        return out

    def screen_all(self, texts: list[str], field: str) -> list[str]:
        """Each of ``texts`` screened (``field[i]`` names the one refused)."""
        return [self.screen(t, f"{field}[{i}]") for i, t in enumerate(texts)]

    def first_refused(self, values: Sequence[Any]) -> int | None:
        """The index of the first of ``values`` (JSON-like: strings, dicts, lists) with a string
        inside it, dict keys included, that :meth:`screen` would refuse or change; ``None`` when
        every one may be stored as it is. One parallel scan of all their strings, for bulk reads
        such as an import.

        >>> SecretPolicy().first_refused([{"text": "fine"}, ["ok", {"k": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}]])
        1
        """
        if all(type(v) is str for v in values):  # plain texts (a batch of messages): each is its string
            return _first_true(self._refused_each(list(values)))
        texts: list[str] = []
        ends: list[int] = []  # ends[at]: how many strings values[: at + 1] hold
        for value in values:
            _strings_in(value, texts)
            ends.append(len(texts))
        # A flagged string is one screen() would refuse, or change when redacting.
        first = _first_true(self._refused_each(texts))
        return None if first is None else bisect.bisect_right(ends, first)

    def first_refused_json(self, texts: Sequence[str]) -> int | None:
        """:meth:`first_refused` of the values ``texts`` (JSON texts) stand for: the index of the
        first with a string inside it, object keys included, that :meth:`screen` would refuse or
        change; ``None`` when every one may be stored as it is. The strings are read from the
        texts in Rust (no Python objects are built) and each distinct one is scanned once, in
        parallel: a JSON document about to be stored is judged as exactly the text stored.

        >>> SecretPolicy().first_refused_json(['{"city": "Paris"}', '["ok", {"k": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}]'])
        1
        """
        items = list(texts)
        start = 0
        while start < len(items):
            hit = self._scanner.first_flagged_json(items[start:], max_chars=DECODE_MAX_CHARS, max_runs=DECODE_MAX_RUNS)
            if hit is None:
                return None
            at = start + hit
            # The kernel also reports texts only Python can judge exactly (lone surrogates): judge
            # the one it found here, from its value.
            if self.first_refused([json.loads(items[at])]) is not None:
                return at
            start = at + 1
        return None

    def screen_object(self, value: Any, field: str) -> None:
        """Refuse ``value``, any Python object a framework hands over to be stored (a graph's state,
        a message object, a pydantic model, a dataclass), when a string inside it holds a secret:
        dict keys, the items of lists, tuples and sets, the fields of pydantic models and
        dataclasses, an object's attributes, and bytes read as UTF-8. Raises
        :class:`SecretRefusedError` whatever the action: an object cannot be rebuilt with a
        placeholder and stay the same object. One parallel scan of all its strings.

        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Note:
        ...     text: str
        >>> SecretPolicy().screen_object({"notes": [Note("fine")]}, "state")
        >>> SecretPolicy().screen_object({"notes": [Note("ghp_abcdefghijklmnopqrstuvwxyz0123456789")]}, "state")
        Traceback (most recent call last):
        ...
        mindcore.errors.SecretRefusedError: state: not stored: it looks like a secret (rule github-token); leave credentials out
        """
        texts: list[str] = []
        _strings_in_object(value, texts, {}, 0)
        at = _first_true(self._refused_each(texts)) if texts else None
        if at is None:
            return
        rules = self.detect(texts[at]) or ["hidden secret"]
        raise SecretRefusedError(
            f"{field}: not stored: it looks like a secret (rule {', '.join(rules)}); leave credentials out"
        )

    def screen_value(self, value: Any, field: str) -> Any:
        """Every string inside a JSON-like value (dict keys too) screened; the value rebuilt when
        redacting."""
        if isinstance(value, str):
            return self.screen(value, field)
        if isinstance(value, Mapping):
            return {self.screen(str(k), f"{field} key"): self.screen_value(v, f"{field}.{k}") for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.screen_value(v, f"{field}[{i}]") for i, v in enumerate(value)]
        return value


def _first_true(flags: list[bool]) -> int | None:
    try:
        return flags.index(True)
    except ValueError:
        return None


def _strings_in(value: Any, out: list[str]) -> None:
    """Every string inside a JSON-like value (dict keys too), appended to ``out``."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            out.append(str(k))
            _strings_in(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _strings_in(v, out)


#: How deep :meth:`SecretPolicy.screen_object` follows nested objects (deeper ones are refused).
OBJECT_MAX_DEPTH = 100


def _strings_in_object(value: Any, out: list[str], seen: dict[int, Any], depth: int) -> None:
    """Every string inside an arbitrary Python object, appended to ``out`` (each object once).
    ``seen`` holds each object visited, which keeps it alive: a dict a pydantic model was dumped
    to must not be freed and its id reused by the next one's."""
    if isinstance(value, str):
        out.append(value)
        return
    if value is None or isinstance(value, bool | int | float | complex):
        return
    if isinstance(value, bytes | bytearray | memoryview):
        out.append(bytes(value).decode("utf-8", "replace"))
        return
    if id(value) in seen:
        return
    if depth >= OBJECT_MAX_DEPTH:
        raise InvalidInputError(f"nested more than {OBJECT_MAX_DEPTH} levels deep: cannot be screened for secrets")
    seen[id(value)] = value
    depth += 1
    if isinstance(value, Mapping):
        for k, v in value.items():
            _strings_in_object(k, out, seen, depth)
            _strings_in_object(v, out, seen, depth)
        return
    if isinstance(value, list | tuple | set | frozenset):
        for v in value:
            _strings_in_object(v, out, seen, depth)
        return
    model_dump = getattr(type(value), "model_dump", None)
    if callable(model_dump):  # a pydantic model: its fields (extra ones too) as it serialises them
        _strings_in_object(model_dump(value), out, seen, depth)
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _strings_in_object(getattr(value, f.name, None), out, seen, depth)
        return
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        _strings_in_object(attrs, out, seen, depth)
    for name in getattr(type(value), "__slots__", ()):
        if isinstance(name, str):
            _strings_in_object(getattr(value, name, None), out, seen, depth)


@functools.cache
def _builtin_scanner() -> SecretScanner:
    return SecretScanner()
