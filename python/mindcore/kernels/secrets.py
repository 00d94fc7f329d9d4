"""Secret scanning: find, flag and redact credentials and personal data in text before it is
persisted.

Every capability runs text through :func:`looks_like_secret` (or a :class:`SecretScanner`)
before storing it. Rules are Rust ``regex`` patterns (finite automata: no backtracking, no
look-around), so a scan is linear in the length of the text whatever it contains. The text is
read in NFKC form with invisible and control characters removed and spaced-out tokens joined, so
fullwidth letters, a zero-width space or ``s k - p r o j - …`` do not hide a key; findings are
reported in the offsets of the text as given.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import mindcore._core as _core
from mindcore.errors import KernelError, KernelTypeError

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "Finding",
    "SecretRule",
    "SecretScanner",
    "builtin_rules",
    "find_secrets",
    "looks_like_secret",
    "redact_secrets",
]

DEFAULT_PLACEHOLDER = "[REDACTED:{rule_id}]"
_NO_CAP = 1 << 62


@dataclass(frozen=True, slots=True)
class SecretRule:
    """A user rule: `pattern` in Rust ``regex`` syntax (no look-around, no backreferences).

    A named group ``secret`` narrows the reported span to that group; otherwise the whole
    match is the secret. User rules are reported exactly as matched (the placeholder checks of
    the built-in rules do not apply).

    `category` says what the rule protects: ``"secret"`` (credentials) or ``"pii"`` (personal
    data). `on_by_default` tells, for a built-in rule, whether a scanner runs it unless told
    otherwise (see :func:`builtin_rules`); user rules always run.

    Examples
    --------
    >>> rule = SecretRule("acme-key", r"acme_(?P<secret>[0-9a-f]{16})", "ACME deploy key")
    >>> SecretScanner([rule], builtin=False).scan("key acme_0123456789abcdef")
    [Finding(rule_id='acme-key', start=9, end=25)]
    """

    id: str
    pattern: str
    description: str = ""
    category: str = "secret"
    on_by_default: bool = True


class Finding(NamedTuple):
    """One secret in a text: the rule that found it and its span as ``str`` indices
    (``text[start:end]`` is the secret)."""

    rule_id: str
    start: int
    end: int


@functools.cache
def _builtin_catalog() -> dict[str, SecretRule]:
    return {
        rid: SecretRule(rid, pattern, desc, category, on)
        for rid, pattern, desc, _kind, _mc, _md, category, on in _core.secret_builtin_rules(include_off=True)
    }


def builtin_rules() -> list[SecretRule]:
    """Every built-in rule in scan order, including those off by default.

    Credentials (``category="secret"``) are all on by default. Personal data
    (``category="pii"``): ``card-number`` (issuer prefix, length and Luhn checksum), ``us-ssn``
    (valid area, group and serial) and ``iban`` (country length and mod-97 checksum) are on by
    default; ``phone`` and ``email`` are off. Switch rules with ``SecretScanner(enable=...,
    disable=...)``.

    Examples
    --------
    >>> [(r.id, r.on_by_default) for r in builtin_rules() if r.category == "pii"]
    [('card-number', True), ('us-ssn', True), ('iban', True), ('phone', False), ('email', False)]
    """
    return list(_builtin_catalog().values())


def _rule_ids(value: object, arg: str) -> list[str]:
    """`value` as a list of built-in rule ids, or an error naming `arg` and the bad item."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise KernelTypeError(f"{arg}: expected an iterable of rule ids, got {type(value).__name__}")
    ids = list(value)
    for i, rid in enumerate(ids):
        _check_str(rid, f"{arg}[{i}]")
        if rid not in _builtin_catalog():
            raise KernelError(f"{arg}[{i}]: no built-in rule {rid!r} (see builtin_rules())")
    return ids


def _check_str(value: object, arg: str) -> str:
    if not isinstance(value, str):
        raise KernelTypeError(f"{arg}: expected str, got {type(value).__name__}")
    return value


def _texts(texts: Iterable[str]) -> list[str]:
    if isinstance(texts, str | bytes):
        raise KernelTypeError(f"texts: expected a sequence of str, got {type(texts).__name__} (wrap it in a list)")
    return texts if isinstance(texts, list) else list(texts)


def _decode_limits(max_chars: int, max_runs: int) -> tuple[int, int]:
    """The decoding caps, checked; any count past what a text can hold means "no cap" (and
    still fits the native size type)."""
    for arg, value in (("max_chars", max_chars), ("max_runs", max_runs)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise KernelTypeError(f"{arg}: expected int, got {type(value).__name__}")
        if value < 0:
            raise KernelError(f"{arg}: expected a count >= 0, got {value}")
    return min(max_chars, _NO_CAP), min(max_runs, _NO_CAP)


def _is_utf8(text: str) -> bool:
    """Whether `text` holds no lone surrogate (every other ``str`` encodes as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _without_surrogates(text: str) -> str:
    """`text` with each lone surrogate (not encodable as UTF-8) replaced by ``?``: one code
    point for one, so offsets are unchanged, and ``?`` continues no secret."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _splice(text: str, spans: list[tuple[str, int, int]], placeholder: str) -> str:
    """Redaction done in Python over findings (only for texts holding lone surrogates)."""
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(spans):
        rule_id, start, end = spans[i]
        i += 1
        while i < len(spans) and spans[i][1] < end:
            end = max(end, spans[i][2])
            i += 1
        out.append(text[pos:start])
        out.append(placeholder.replace("{rule_id}", rule_id))
        pos = end
    out.append(text[pos:])
    return "".join(out)


class SecretScanner:
    """A compiled set of secret rules: built-in credential shapes plus your own.

    The built-in rules cover API keys and tokens by vendor shape (OpenAI, Anthropic, GitHub,
    GitLab, Stripe, AWS, Google, Slack, Discord, Artifactory, npm, PyPI, Azure and three dozen
    more), Authorization and Bearer headers, JWTs, PEM/OpenSSH/PGP private keys of any length,
    credentials in URLs of any scheme and on command lines, and secrets by context: a value
    given to a credential-like name (``api_key``, ``token``, ``secret``, ``password``, ``auth``,
    ``credential``, ``private_key``, … in ``k=v``, ``k: v``, JSON, YAML, XML elements and
    attributes, env files, ``--password VALUE`` flags, HTTP headers), a random-looking value
    given to a name ending in ``KEY``/``TOKEN``/``SECRET``, a random-looking token on its own,
    and a credential told in a sentence ("my wifi password is …"). Personal data: card numbers,
    US social security numbers and IBANs (checksums verified) are on by default; phone numbers
    and e-mail addresses are off (see :func:`builtin_rules`).

    A vendor token in the vendor's exact format (its own prefix, the body's full length and
    alphabet: ``sk_live_`` + 24 characters, ``tskey-api-…``, an OpenAI key with its
    ``T3BlbkFJ`` marker) is reported whatever its body looks like, unless it is all ``x`` or a
    template slot. Other look-alikes are dropped after matching: placeholders (``xxxx``,
    ``<your-key>``, ``${VAR}``, ``changeme``), keys their vendors published as documentation
    examples (``AKIAIOSFODNN7EXAMPLE``, the Kubernetes docs' Secret, Firebase's SDK keys), code
    that reads a secret (``os.environ["API_KEY"]``), near misses of a vendor format made by hand
    (runs, long sequences, ``…test`` endings), and for the shape-only rules UUIDs, hex hashes,
    base64 of plain text, names and words, runs and sequences (``abcdef``, ``123456``), base64
    blocks and data URIs. A missed key is worse than a false alarm, so the rules lean towards
    reporting.

    Compile once and reuse: construction costs milliseconds, a scan of clean text is one pass.
    Batch methods run in parallel with the GIL released.

    Parameters
    ----------
    extra_rules
        :class:`SecretRule` s appended after the built-in rules.
    builtin
        Include the built-in rules that are on by default.
    enable
        Ids of built-in rules to run as well (``["phone", "email"]``), also with
        ``builtin=False``.
    disable
        Ids of built-in rules not to run (``["card-number"]``).

    Raises
    ------
    KernelError
        A rule pattern does not compile (the message names the rule id), a rule id is empty or
        used twice, `enable` or `disable` names no built-in rule (an
        :class:`~mindcore.errors.KernelError`).

    Examples
    --------
    >>> scanner = SecretScanner()
    >>> scanner.scan("my key is AKIAHDU6GDPMRCG4BE4U")
    [Finding(rule_id='aws-access-key-id', start=10, end=30)]
    >>> scanner.redact("password: Summer2024!")
    'password: [REDACTED:generic-secret-assignment]'
    >>> scanner.contains("the token of my appreciation")
    False
    >>> scanner.scan("my wifi password is Tr0ub4dor&3")
    [Finding(rule_id='credential-disclosure', start=20, end=31)]
    >>> SecretScanner(enable=["email"]).scan("write to jane.doe@mail.com")
    [Finding(rule_id='email', start=9, end=26)]
    """

    __slots__ = ("_native", "_rules")

    def __init__(
        self,
        extra_rules: Iterable[SecretRule] = (),
        *,
        builtin: bool = True,
        enable: Iterable[str] = (),
        disable: Iterable[str] = (),
    ) -> None:
        if isinstance(extra_rules, SecretRule):
            raise KernelTypeError(
                "extra_rules: expected an iterable of SecretRule, got a SecretRule (wrap it in a list)"
            )
        pairs: list[tuple[str, str]] = []
        extra: list[SecretRule] = []
        for i, rule in enumerate(extra_rules):
            if not isinstance(rule, SecretRule):
                raise KernelTypeError(f"extra_rules[{i}]: expected SecretRule, got {type(rule).__name__}")
            _check_str(rule.id, f"extra_rules[{i}].id")
            _check_str(rule.pattern, f"extra_rules[{i}].pattern")
            _check_str(rule.description, f"extra_rules[{i}].description")
            pairs.append((rule.id, rule.pattern))
            extra.append(rule)
        if not isinstance(builtin, bool):
            raise KernelTypeError(f"builtin: expected bool, got {type(builtin).__name__}")
        enabled, disabled = _rule_ids(enable, "enable"), _rule_ids(disable, "disable")
        both = set(enabled) & set(disabled)
        if both:
            raise KernelError(f"enable, disable: {sorted(both)} given in both")
        self._native = _core.SecretScanner(pairs, builtin, enabled, disabled)
        catalog = _builtin_catalog()
        ids = self._native.rule_ids
        self._rules = tuple(catalog[rid] for rid in ids[: len(ids) - len(extra)]) + tuple(extra)

    @property
    def rules(self) -> list[SecretRule]:
        """The rules in scan order, with their descriptions (built-in rules first)."""
        return list(self._rules)

    @property
    def rule_ids(self) -> list[str]:
        """Rule ids in scan order: built-in rules first, then the extra rules."""
        return self._native.rule_ids

    def rule(self, rule_id: str) -> SecretRule:
        """The rule this scanner runs under `rule_id` (to name it when a finding refuses a write).

        Raises
        ------
        KeyError
            This scanner runs no rule with that id.
        """
        for r in self._rules:
            if r.id == rule_id:
                return r
        raise KeyError(rule_id)

    def scan(self, text: str) -> list[Finding]:
        """Every secret in `text`, sorted by position.

        Spans from different rules may overlap; of two findings with the same span only the
        earlier rule (in :attr:`rule_ids` order) is reported.
        """
        _check_str(text, "text")
        try:
            raw = self._native.scan(text)
        except UnicodeEncodeError:
            raw = self._native.scan(_without_surrogates(text))
        return [Finding(*f) for f in raw]

    def scan_batch(self, texts: Iterable[str]) -> list[list[Finding]]:
        """:meth:`scan` of each text, in parallel."""
        items = _texts(texts)
        try:
            raw = self._native.scan_batch(items)
        except UnicodeEncodeError:
            raw = self._native.scan_batch([_without_surrogates(t) for t in items])
        return [[Finding(*f) for f in fs] for fs in raw]

    def contains(self, text: str) -> bool:
        """Whether `text` holds at least one secret (stops at the first)."""
        _check_str(text, "text")
        try:
            return self._native.contains(text)
        except UnicodeEncodeError:
            return self._native.contains(_without_surrogates(text))

    def contains_batch(self, texts: Iterable[str]) -> list[bool]:
        """:meth:`contains` of each text, in parallel."""
        items = _texts(texts)
        try:
            return self._native.contains_batch(items)
        except UnicodeEncodeError:
            return self._native.contains_batch([_without_surrogates(t) for t in items])

    def contains_batch_decoded(self, texts: Iterable[str], *, max_chars: int, max_runs: int) -> list[bool]:
        """:meth:`contains` of each text, or of one of its decoded forms, in parallel: its JSON
        string escapes decoded (over its first `max_chars` characters), then each percent-encoded
        run and each base64 run of 16 or more characters that decodes to printable text, of the
        text and of its unescaped form, at most `max_runs` runs in all. These are the forms
        :func:`mindcore.policy.decoded_views` lists; :class:`~mindcore.policy.SecretPolicy`
        refuses what this finds.

        Examples
        --------
        >>> SecretScanner().contains_batch_decoded(
        ...     ["fine", "id=%67hp%5F2FDEEtfjgVvVqE1SkHbn88HxjSI6bWHtP3fS"], max_chars=1 << 20, max_runs=256)
        [False, True]
        """
        items = _texts(texts)
        max_chars, max_runs = _decode_limits(max_chars, max_runs)
        try:
            return self._native.contains_batch_decoded(items, max_chars, max_runs)
        except UnicodeEncodeError:
            clean = [_without_surrogates(t) for t in items]
            return self._native.contains_batch_decoded(clean, max_chars, max_runs)

    def first_flagged_json(self, texts: Iterable[str], *, max_chars: int, max_runs: int) -> int | None:
        """The index of the first of `texts` (JSON texts, as :func:`json.loads` reads them) holding
        a string, an object key or a value, that :meth:`contains_batch_decoded` flags; ``None``
        when there is none. Only the strings are judged, each on its own, as
        :meth:`~mindcore.policy.SecretPolicy.first_refused` judges the value the text stands for;
        the texts are read in Rust, in parallel, and each distinct string is scanned once.

        A text holding a lone surrogate (as written, or as a ``\\u`` escape) is reported too:
        only Python can judge that string as it is, so the caller looks at it again.

        Raises
        ------
        KernelError
            A text is not JSON.

        Examples
        --------
        >>> SecretScanner().first_flagged_json(
        ...     ['{"city": "Paris"}', '["x", {"k": "ghp_2FDEEtfjgVvVqE1SkHbn88HxjSI6bWHtP3fS"}]'],
        ...     max_chars=1 << 20, max_runs=256)
        1
        """
        items = _texts(texts)
        max_chars, max_runs = _decode_limits(max_chars, max_runs)
        try:
            return self._native.first_flagged_json(items, max_chars, max_runs)
        except UnicodeEncodeError:
            lone = next(i for i, t in enumerate(items) if not _is_utf8(t))
            before = self._native.first_flagged_json(items[:lone], max_chars, max_runs)
            return lone if before is None else before

    def redact(self, text: str, placeholder: str = DEFAULT_PLACEHOLDER) -> str:
        """`text` with each secret replaced by `placeholder`, where ``{rule_id}`` becomes the id
        of the rule that found it. Overlapping findings become one placeholder (labelled with
        the first of them in scan order: earliest start, then shortest)."""
        _check_str(text, "text")
        _check_str(placeholder, "placeholder")
        try:
            return self._native.redact(text, placeholder)
        except UnicodeEncodeError:
            return _splice(text, self._native.scan(_without_surrogates(text)), placeholder)

    def redact_batch(self, texts: Iterable[str], placeholder: str = DEFAULT_PLACEHOLDER) -> list[str]:
        """:meth:`redact` of each text, in parallel."""
        items = _texts(texts)
        _check_str(placeholder, "placeholder")
        try:
            return self._native.redact_batch(items, placeholder)
        except UnicodeEncodeError:
            return [self.redact(t, placeholder) for t in items]

    def __repr__(self) -> str:
        return f"SecretScanner({len(self.rule_ids)} rules)"


@functools.cache
def _default() -> SecretScanner:
    return SecretScanner()


def looks_like_secret(text: str) -> bool:
    """Whether `text` holds a credential by the built-in rules: the filter every write runs.

    Examples
    --------
    >>> looks_like_secret("remember that my dog is called Rex")
    False
    >>> looks_like_secret("use postgres://app:Zq9x!pL2@db.internal:5432/app")
    True
    """
    return _default().contains(text)


def find_secrets(text: str) -> list[Finding]:
    """:meth:`SecretScanner.scan` with the built-in rules.

    Examples
    --------
    >>> find_secrets("token ghp_2FDEEtfjgVvVqE1SkHbn88HxjSI6bWHtP3fS")
    [Finding(rule_id='github-token', start=6, end=46)]
    """
    return _default().scan(text)


def redact_secrets(text: str, placeholder: str = DEFAULT_PLACEHOLDER) -> str:
    """:meth:`SecretScanner.redact` with the built-in rules.

    Examples
    --------
    >>> redact_secrets("Authorization: Bearer ywhjpU05mc4J1WRcQ7wjJJ")
    'Authorization: Bearer [REDACTED:authorization-header]'
    """
    return _default().redact(text, placeholder)
