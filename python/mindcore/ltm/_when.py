"""Recall's time lever: a query that names a time ("in May 2023", "on October 13, 2023", "last
year") favours the memories dated then (their ``created_at``, the date a fact describes when it
was given at write time), see :attr:`~mindcore.ltm.RecallOptions.time_boost`.

A dated row scores ``s + boost·|s|``, an increasing function of its score ``s``. Both recall
paths (:meth:`LongTermMemory.recall` and :func:`mindcore.batch.recall`) ask their kernel for the
top rows twice, once over every row and once over the dated rows alone, and merge the two
(:func:`with_time_boost`): the same top as scoring every row again, at the cost of a second pass.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import numpy as np

__all__ = ["TimeWindow", "dated", "time_window", "with_time_boost"]

_DAY_MS = 86_400_000
_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): n for n, name in enumerate(calendar.month_abbr) if name}
_MONTH = r"(?P<{0}>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|" \
         r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
_YEAR = r"(?P<{0}>(?:19|20)\d\d)"
_DAY = r"(?P<{0}>[0-3]?\d)(?:st|nd|rd|th)?"
# Most specific first: a span one pattern took is not read again by the next.
_DATES = re.compile("|".join([
    r"\b(?P<iy>(?:19|20)\d\d)-(?P<im>[01]\d)-(?P<id>[0-3]\d)\b",
    rf"\b{_MONTH.format('am')}\s+{_DAY.format('ad')},?\s+{_YEAR.format('ay')}\b",
    rf"\b{_DAY.format('bd')}\s+(?:of\s+)?{_MONTH.format('bm')},?\s+{_YEAR.format('by')}\b",
    rf"\b{_MONTH.format('cm')},?\s+(?:of\s+)?{_YEAR.format('cy')}\b",
    rf"\b{_YEAR.format('y')}\b",
    # A month alone, spelt out, capitalised and not opening the sentence ("May I..." is no date,
    # nor is "Jan"): that month in any year.
    rf"(?<=\S\s)(?P<m>{'|'.join(calendar.month_name[1:])})(?![\w-])",
    r"\b(?P<rel>today|yesterday|this (?:week|month|year)|last (?:week|weekend|month|year))\b",
]), re.IGNORECASE)


class TimeWindow(NamedTuple):
    """The times a query names: half-open ``[start, end)`` ranges in unix ms (UTC), and months of
    the year that match in any year."""

    ranges: tuple[tuple[int, int], ...]
    months: frozenset[int]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _month_range(year: int, month: int) -> tuple[int, int]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return _ms(start), _ms(end)


def _day_range(year: int, month: int, day: int) -> tuple[int, int] | None:
    """The day, with one day of slack each side (a fact dated by the session that told it)."""
    try:
        start = _ms(datetime(year, month, day, tzinfo=UTC))
    except ValueError:  # "February 30": not a date
        return None
    return start - _DAY_MS, start + 2 * _DAY_MS


def _relative(phrase: str, now_ms: int) -> tuple[int, int]:
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    today = _ms(now.replace(hour=0, minute=0, second=0, microsecond=0))
    if phrase == "today":
        return today, today + _DAY_MS
    if phrase == "yesterday":
        return today - _DAY_MS, today
    if phrase.endswith("year"):
        year = now.year - (phrase.startswith("last"))
        return _ms(datetime(year, 1, 1, tzinfo=UTC)), _ms(datetime(year + 1, 1, 1, tzinfo=UTC))
    if phrase.endswith("month"):
        first = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        if phrase.startswith("last"):
            first = (first - timedelta(days=1)).replace(day=1)
        return _month_range(first.year, first.month)
    monday = today - now.weekday() * _DAY_MS
    if phrase == "this week":
        return monday, today + _DAY_MS
    if phrase == "last weekend":  # Friday to Sunday before this week
        return monday - 3 * _DAY_MS, monday
    return monday - 7 * _DAY_MS, monday


def time_window(query: str, now_ms: int) -> TimeWindow | None:
    """The times ``query`` names, or ``None`` when it names none.

    Recognised: ISO dates (``2023-05-23``), dates with a month name (``May 23, 2023``, ``23 May
    2023``; the day with one day's slack each side), a month and year (``July 2023``), a year
    (``in 2022``), a month alone (``in June``: June of any year), and ``today``, ``yesterday``,
    ``this``/``last`` ``week``/``month``/``year`` and ``last weekend``, counted from ``now_ms``.

    >>> w = time_window("What did Maria donate in December 2023?", 0)
    >>> [(datetime.fromtimestamp(a / 1000, UTC).date().isoformat(), datetime.fromtimestamp(b / 1000, UTC).date().isoformat())
    ...  for a, b in w.ranges]
    [('2023-12-01', '2024-01-01')]
    >>> time_window("May I ask where you went?", 0) is None
    True
    """
    ranges: list[tuple[int, int]] = []
    months: set[int] = set()
    for match in _DATES.finditer(query):
        g = match.groupdict()
        if g["iy"]:
            day = _day_range(int(g["iy"]), int(g["im"]), int(g["id"])) if 1 <= int(g["im"]) <= 12 else None
            ranges.extend([day] if day else [])
        elif g["am"] or g["bm"]:
            month, day_text, year = (g["am"], g["ad"], g["ay"]) if g["am"] else (g["bm"], g["bd"], g["by"])
            day = _day_range(int(year), _MONTHS[month.lower()], int(day_text))
            ranges.extend([day] if day else [])
        elif g["cm"]:
            ranges.append(_month_range(int(g["cy"]), _MONTHS[g["cm"].lower()]))
        elif g["y"]:
            year = int(g["y"])
            ranges.append((_ms(datetime(year, 1, 1, tzinfo=UTC)), _ms(datetime(year + 1, 1, 1, tzinfo=UTC))))
        elif g["m"]:
            if g["m"][0].isupper():
                months.add(_MONTHS[g["m"].lower()])
        else:
            ranges.append(_relative(" ".join(g["rel"].lower().split()), now_ms))
    if not ranges and not months:
        return None
    return TimeWindow(tuple(ranges), frozenset(months))


def dated(window: TimeWindow, created_ms: np.ndarray) -> np.ndarray:
    """Which of ``created_ms`` (unix ms) fall in ``window``."""
    created = np.asarray(created_ms, dtype=np.int64)
    inside = np.zeros(created.shape, dtype=bool)
    for start, end in window.ranges:
        inside |= (created >= start) & (created < end)
    if window.months:
        month = created.astype("datetime64[ms]").astype("datetime64[M]").astype(np.int64) % 12 + 1
        inside |= np.isin(month, np.fromiter(window.months, dtype=np.int64))
    return inside


def with_time_boost(top: tuple[np.ndarray, Any, Any], inside: np.ndarray, top_dated: tuple[np.ndarray, Any, Any],
                    *, need: int, complete: bool, boost: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The best ``need`` rows once the dated ones score ``s + boost·|s|``: indices, scores and
    similarities, best first, and whether they are every row.

    ``top`` is the kernel's best ``need`` rows (``complete``: every row), ``inside`` which of them
    are dated, and ``top_dated`` the kernel's best ``need`` dated rows. That is enough: a row in
    neither scores at most the last of its list (the boost only raises a score), and both lists
    hold ``need`` rows scoring at least that."""
    hits, scores, similarities = top
    kept = ~np.asarray(inside, dtype=bool)
    dated_hits, dated_scores, dated_similarities = top_dated
    lifted = np.asarray(dated_scores, dtype=np.float64)
    lifted = lifted + boost * np.abs(lifted)
    rows = np.concatenate([np.asarray(hits, dtype=np.int64)[kept], np.asarray(dated_hits, dtype=np.int64)])
    fused = np.concatenate([np.asarray(scores, dtype=np.float64)[kept], lifted])
    sims = np.concatenate([np.asarray(similarities, dtype=np.float32)[kept],
                           np.asarray(dated_similarities, dtype=np.float32)])
    order = np.argsort(-fused, kind="stable")[:need]
    return rows[order], fused[order], sims[order], complete and len(rows) <= need
