"""The rule-based pair classifier: cues read off both texts, then a fixed order of decisions.

Each text is analysed once (:class:`_Analysis`): its words keep their case (capitalised words are
names and places), its content words go through the BM25 analyzer (lower case, light stemming,
English stop words) and a small synonym table, and the cues are collected: negations, numbers,
dates and times, capitalised entities, the possessive or family subject ("Wife's ...",
"Sister has ..."), update cues ("now", "moved to", "switched to"). The decision then runs in this
order, the first match winning:

1. same text after case and space folding: duplicate;
2. different subjects ("Sister has a dog" after "Has a dog"): unrelated;
3. too little in common (content overlap, or the embeddings' cosine when given): unrelated;
4. negation on one side only: contradiction;
5. an antonym pair (likes/dislikes, on/off, single/married, un-/dis- prefixes) or a reversed
   comparison ("dogs more than cats" / "cats more than dogs"): contradiction;
6. a changed value (number, date or time, name or place): update when the new text says it
   changed ("moved to", "now"), unrelated when the verb takes many values ("visited Japan" /
   "visited Korea"), else contradiction;
7. an update cue, or a new detail with the old text's words kept: update;
8. the same content words (paraphrase): duplicate; otherwise unrelated (keeping both memories is
   the safe side: a wrong duplicate loses a fact).

Those verdicts are the rules' best guess, and a guess must not retire what a user said: "Has a pet
dog named Rex" after "Has a pet cat named Tom" reads as a changed name, yet both are true.
:func:`judge_pair` is what a write may act on without a model. It says ``duplicate`` only for a
near-verbatim repeat (the same words, give or take articles, number words, synonyms and
punctuation; or, at a cosine of at least ``duplicate_cosine``, the same content words, values and
polarity), ``contradiction`` only for an explicit negation of the same statement ("Is allergic to
peanuts" / "Is not allergic to peanuts"), and ``unrelated`` for everything else, with the rules'
guess in ``possible`` when they suspect an update or a contradiction.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mindcore.kernels import ENGLISH_STOP_WORDS, bm25_tokenize
from mindcore.relations._types import PairVerdict

__all__ = ["classify_pair", "classify_pairs", "judge_pair", "judge_pairs"]

# Below this content-word overlap (|A∩B| / min(|A|, |B|)) a pair is unrelated unless the embeddings say
# otherwise.
MIN_OVERLAP = 0.5
# A changed value (number, date, name, place) contradicts or updates only when the words around the values
# overlap at least this much (|A∩B| / min(|A|, |B|)); else the two texts state different facts.
MIN_FRAME = 0.6
# An antonym contradicts only when the rest of the two texts is about this close ("lights on" / "lights
# off", not "coffee in the morning" / "tea at night").
ANTONYM_OVERLAP = 0.67
# A cosine this high makes two texts related even with few words in common ("Works remotely" /
# "Works from home").
RELATED_COSINE = 0.75
# Paraphrases whose content words differ on both sides count as duplicates only at this cosine.
DUPLICATE_COSINE = 0.9

_WORD = re.compile(r"[^\W_]+")
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b|\b(\d{1,2}):(\d{2})\b", re.IGNORECASE)
_COMPARE = re.compile(r"\b(\w+) (?:more than|rather than|better than|over|instead of) (\w+)", re.IGNORECASE)

# Phrases that look negative but are not a denial, or whose negation is a polarity word; rewritten
# before the cues are read.
_IDIOM_LIST = (
    (r"(?:can ?not|can[\u2019']?t) wait", "is eager"),
    (r"(?:can ?not|can[\u2019']?t) stand", "hates"),
    (r"(?:can ?not|can[\u2019']?t) get enough of", "loves"),
    (r"not only", "also"),
    (r"no doubt", "surely"),
    (r"no matter", "whatever"),
)
_IDIOM = re.compile("|".join(rf"\b(?P<i{n}>{pattern})\b" for n, (pattern, _) in enumerate(_IDIOM_LIST)),
                    re.IGNORECASE)
_IDIOM_HINT = re.compile(r"\bno|not|n[\u2019']t\b", re.IGNORECASE)  # most texts skip the idiom pass
_COMPARE_HINT = re.compile(r"\b(?:than|over|instead)\b")


def _idiom(match: re.Match[str]) -> str:
    return _IDIOM_LIST[int(str(match.lastgroup)[1:])][1]


_NEGATIONS = frozenset({"not", "no", "never", "cannot", "without", "none", "nor", "neither", "nobody", "nothing"})
# The first half of a contraction the analyzer splits at the apostrophe ("doesn't" -> doesn, t).
_NT = frozenset({"doesn", "don", "isn", "aren", "wasn", "weren", "didn", "won", "can", "couldn", "shouldn",
                 "wouldn", "hasn", "haven", "hadn", "ain", "mustn", "needn"})
# Verbs and phrases that end a fact: "quit smoking" denies "smokes".
_ENDINGS = frozenset({"quit", "quits", "stopped", "stops", "cancelled", "canceled", "deleted", "anymore", "longer"})

_UPDATE_CUES = frozenset({
    "now", "currently", "moved", "moving", "relocated", "switched", "switching", "changed", "new", "upgraded",
    "promoted", "became", "started", "starts", "began", "finished", "sold", "signed", "got", "accepted",
    "transferred", "joined", "replaced", "instead", "since", "booked", "found", "held",
    "drafted", "turning", "teamed", "third",
})

_RELATIONS = frozenset({
    "wife", "husband", "partner", "son", "daughter", "mother", "mom", "mum", "father", "dad", "sister",
    "brother", "parents", "kids", "children", "friend", "boss", "colleague", "team", "grandma", "grandpa",
    "grandmother", "grandfather", "family", "cousin", "aunt", "uncle", "niece", "nephew", "roommate",
})
_SPOUSES = frozenset({"wife", "husband", "partner"})
_DETERMINERS = frozenset({"their", "his", "her", "my", "the", "user", "users", "s"})

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_DAYPARTS = frozenset({"morning", "mornings", "afternoon", "afternoons", "evening", "evenings", "night",
                       "nights", "tonight", "yesterday", "today", "tomorrow", "weekend", "weekends"})
_UNITS = frozenset({"minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "month", "months",
                    "year", "years", "decade", "decades"})
_UNIT_LEADS = frozenset({"last", "next", "this", "within", "a", "one", "per", "ago"})

_NUMBER_WORDS = {
    w: str(i) for i, w in enumerate(
        ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))
}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "once": "1", "twice": "2",
                      "single": "1", "couple": "2", "dozen": "12"})
_ORDINALS = {
    w: str(i + 1) for i, w in enumerate(
        ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
         "twelfth"))
}
_ORDINAL_SUFFIX = re.compile(r"^(\d+)(?:st|nd|rd|th)$")

# Opposites, as words (stemmed at import). A pair matches when one side holds the left words and the
# other the right words (and not the reverse).
_ANTONYMS_RAW = (
    ("likes", "dislikes"), ("like", "dislike"), ("loves", "hates"), ("love", "hate"), ("enjoys", "hates"),
    ("likes", "hates"), ("up", "down"), ("on", "off"), ("open", "closed"), ("single", "married"),
    ("vegetarian", "eats meat"), ("vegan", "eats meat"), ("early riser", "night owl"), ("morning person", "night owl"),
    ("cold", "hot"), ("warm", "cold"), ("left", "right"), ("introvert", "extrovert"), ("long", "short"),
    ("employed", "unemployed"), ("dark", "light"), ("always", "never"), ("easy", "hard"), ("easy", "difficult"),
    ("relaxing", "stressful"), ("calm", "stressful"), ("agrees", "disagrees"), ("more", "less"),
    ("increase", "decrease"), ("rising", "falling"), ("win", "lose"), ("won", "lost"), ("passed", "failed"),
    ("accepted", "rejected"), ("allowed", "forbidden"), ("true", "false"), ("yes", "no"), ("cheap", "expensive"),
    ("fast", "slow"), ("early", "late"), ("before", "after"), ("love", "dislike"), ("loves", "dislikes"),
    ("healthy", "sick"), ("full", "part"), ("rent", "own"), ("rents", "owns"), ("public", "private"),
    ("morning", "afternoon"), ("morning", "evening"), ("morning", "night"), ("weekdays", "weekends"),
    ("summer", "winter"), ("spring", "autumn"), ("pass", "fail"), ("sunny", "rainy"), ("better", "worse"),
    ("older", "younger"), ("big", "small"), ("large", "small"), ("love", "hate"), ("fan", "hater"),
    ("green", "red"), ("enabled", "disabled"), ("online", "offline"), ("succeeded", "failed"), ("works", "broken"),
    ("working", "broken"), ("present", "absent"), ("alive", "dead"), ("awake", "asleep"), ("inside", "outside"),
)
_NEG_PREFIXES = ("un", "dis", "in", "im", "non", "ir", "il")

# Verbs (as stems) that take many values at once: a different value is another fact, not a conflict.
_MULTI_VALUED_RAW = (
    "visited", "visit", "visits", "speaks", "speak", "allergic", "afraid", "plays", "play", "likes", "like",
    "loves", "enjoys", "collects", "watches", "watch", "reads", "grows", "learning", "learn", "knows", "friend",
    "friends", "read", "reading",
)
# Words that make a fact single-valued whatever its verb: "favourite game is X".
_SINGLE_VALUED_RAW = ("favorite", "favourite", "name", "named", "called", "best")

# Words a paraphrase swaps for one another, folded to the first of each group (as stems).
_SYNONYMS_RAW = (
    ("learn", "study", "studies", "studying", "student"), ("kid", "kids", "child", "children", "son", "daughter"),
    ("home", "house"), ("buy", "bought", "purchase", "get", "got"), ("start", "began", "begin", "set"),
    ("fear", "afraid", "scared"), ("mother", "mom", "mum"), ("father", "dad"), ("pup", "puppy", "dog"),
    ("shop", "store"), ("clothes", "clothing"),
    ("like", "likes", "love", "loves", "enjoy", "enjoys", "fan", "prefer", "prefers", "want", "wants"),
    ("name", "named", "called", "call"), ("own", "owns", "has", "have"),
    ("live", "lives", "living", "moved", "moving", "relocated"), ("job", "work", "works", "working"), ("travel", "traveled", "travelled", "trip", "visit"),
    ("tough", "hard", "difficult"), ("run", "running", "runs"), ("walk", "walks", "walking"),
    ("allergy", "allergic"), ("diet", "eat", "eats"), ("short", "concise", "brief"),
    ("relax", "relaxes", "relaxing", "calm"), ("each", "every"), ("sleep", "bed"), ("swim", "swimmer", "swimming"),
    ("drive", "drives"), ("hope", "hopes", "wish"), ("meditate", "meditation"), ("answer", "reply", "replies"),
    ("pass", "passed", "lost", "die", "died"), ("close", "closed", "shut"), ("camp", "camped", "camping"),
    ("remote", "remotely"), ("tired", "exhausted"), ("weekend", "weekends"), ("morning", "mornings"),
    ("trip", "travel"), ("lactose", "dairy"), ("intolerant", "intolerance"), ("diabetes", "diabetic"),
    ("vegetarian", "veggie"), ("vegan", "plant"), ("think", "considering", "consider"), ("take", "takes"),
)

# Words a near-verbatim repeat may add or drop.
_FILLER = frozenset({"a", "an", "the", "really", "very", "just", "also", "actually", "quite", "so", "too"})
# Words that only carry a negation, or the auxiliary in front of one ("does not like" / "likes").
_NEGATION_ONLY = _NEGATIONS | _NT | _ENDINGS | {"t", "do", "does", "did"}

# Function words beyond the analyzer's stop list that carry no fact.
_EXTRA_STOP = frozenset({
    "s", "t", "has", "have", "had", "also", "just", "really", "very", "some", "any", "bit", "lot", "about",
    "usually", "often", "all", "as", "than", "so", "too", "would", "will", "can", "there", "up", "out",
    "into", "user", "users", "recently", "together", "while", "own", "fully", "who", "go",
    "goes", "going", "get", "gets", "is", "am", "it", "one", "new", "now", "currently", "still",
    "around", "at", "most", "mostly", "follow", "follows", "make", "makes", "do", "take", "takes", "rather",
    "each", "every",
}) | _NEGATIONS | _NT | _ENDINGS


def _stem_words(text: str) -> list[str]:
    return [_norm_stem(s) for s in bm25_tokenize(text, stem=True)]


@functools.lru_cache(maxsize=65_536)
def _norm_stem(stem: str) -> str:
    """The analyzer's stem, folded further so inflections meet ("runn" / "run", "lik" / "like")."""
    if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
        stem = stem[:-1]  # running -> runn -> run
    if len(stem) > 6 and stem.endswith("ion"):
        stem = stem[:-3]  # meditation -> meditat, as meditates -> meditat
    if len(stem) > 3 and stem.endswith("e"):
        stem = stem[:-1]  # like -> lik, as likes -> lik
    return stem


def _phrase(words: str) -> tuple[str, ...]:
    return tuple(_stem_words(words))


# Each opposite, both ways round, under every stem of its first side: a pair is looked up only by
# the stems one text has and the other lacks.
_ANTONYMS: dict[str, list[tuple[str, tuple[str, ...], str, tuple[str, ...]]]] = {}
for _a, _b in _ANTONYMS_RAW:
    for _x, _y in ((_a, _b), (_b, _a)):
        for _s in _phrase(_x):
            _ANTONYMS.setdefault(_s, []).append((_x, _phrase(_x), _y, _phrase(_y)))
_MULTI_VALUED = frozenset(s for w in _MULTI_VALUED_RAW for s in _stem_words(w))
_SINGLE_VALUED = frozenset(s for w in _SINGLE_VALUED_RAW for s in _stem_words(w))
_SYNONYMS: dict[str, str] = {}
for _group in _SYNONYMS_RAW:
    _stems = [s for w in _group for s in _stem_words(w)]
    for _s in _stems:
        _SYNONYMS.setdefault(_s, _stems[0])
_STOP = frozenset(ENGLISH_STOP_WORDS) | frozenset(_norm_stem(s) for w in _EXTRA_STOP for s in bm25_tokenize(w, stem=True)) | _EXTRA_STOP
# What a (lower-case) word can be, for the one pass over a text's words; update cues that are also
# something else ("new", "now") are checked separately.
_KIND: dict[str, str] = {
    **dict.fromkeys(_UPDATE_CUES, "cue"),
    **{w: "unit" for w in _UNITS},
    **{w: "daypart" for w in _DAYPARTS},
    **{w: "ordinal" for w in _ORDINALS},
    **{w: "number" for w in _NUMBER_WORDS},
    **{w: "month" for w in _MONTHS},
    **{d: "weekday" for d in _WEEKDAYS}, **{d + "s": "weekday" for d in _WEEKDAYS},
    **dict.fromkeys(_NEGATIONS | _ENDINGS | {"t", "up"}, "neg"),
}


@dataclass(frozen=True, slots=True)
class _Analysis:
    """Everything the decision reads off one text."""

    folded: str
    stems: tuple[str, ...]  # every word, stemmed, in order
    content: frozenset[str]  # content words, stemmed and folded to synonyms
    negations: int
    neg_words: tuple[str, ...]
    numbers: frozenset[str]
    times: frozenset[str]
    entities: frozenset[str]
    subject: str | None
    first: str | None  # the first word, lower-cased, when it may be a name ("Max, John's dog")
    update_cues: frozenset[str]
    comparisons: frozenset[tuple[str, str]]
    written: dict[str, str]  # stem (or folded synonym) -> the word as the text has it, for reasons
    core: tuple[str, ...]  # the words in order, filler dropped, numbers and synonyms folded
    core_positive: tuple[str, ...]  # ``core`` without the words that carry a negation

    def word(self, stem: str) -> str:
        return self.written.get(stem, stem)

    def words(self, stems: Iterable[str]) -> str:
        return ", ".join(sorted(self.word(s) for s in stems)) or "-"


def _analyse(text: str) -> _Analysis:
    rewritten = _IDIOM.sub(_idiom, text) if _IDIOM_HINT.search(text) else text
    words = _WORD.findall(rewritten)
    lower = [w.lower() for w in words]
    stems = [_norm_stem(s) for s in bm25_tokenize(" ".join(lower), stem=True)]
    if len(stems) != len(lower):  # a character the two splitters see differently: keep the plain words
        stems = [_norm_stem(w) for w in lower]

    neg_words: list[str] = []
    number_of: dict[int, str] = {}  # word position -> its value, so "four" and "4" meet in the content words
    times: set[str] = set()
    entities: set[str] = set()
    cues: set[str] = set()
    n = len(lower)
    for i, w in enumerate(lower):
        if i and words[i][0].isupper() and w != "i":
            entities.add(w)
        kind = _KIND.get(w)
        if kind is None:
            if w[0].isdigit():
                if w.isdigit():
                    if len(w) == 4 and w[:2] in ("19", "20"):
                        times.add(w)
                    else:
                        number_of[i] = str(int(w))
                elif (m := _ORDINAL_SUFFIX.match(w)) is not None:
                    number_of[i] = str(int(m.group(1)))
            continue
        prev = lower[i - 1] if i else ""
        if kind == "neg":
            if w == "no" and i + 1 < n and lower[i + 1] == "longer":
                continue  # "no longer" counts once, at "longer"
            if w == "longer" and prev != "no":
                continue
            if w == "t" and prev not in _NT:
                continue
            if w == "up" and prev not in ("gave", "give"):
                continue
            neg_words.append({"t": f"{prev}'t", "longer": "no longer", "up": f"{prev} up"}.get(w, w))
        elif kind == "cue":
            cues.add(w)
        elif kind == "weekday" or kind == "daypart":
            times.add(w.rstrip("s"))
        elif kind == "month":
            if w != "may" or (i and words[i][0].isupper()):
                times.add(w)
        elif kind == "unit":
            if i + 1 < n and lower[i + 1] == "ago":
                times.add(f"{number_of.get(i - 1, prev)} {w.rstrip('s')} ago")  # "five years ago"
            elif prev in _UNIT_LEADS:
                times.add(f"{prev} {w.rstrip('s')}" if prev in ("last", "next", "this") else w.rstrip("s"))
        elif kind == "number":
            if not (w == "one" and prev in ("the", "this", "that")):
                number_of[i] = _NUMBER_WORDS[w]
        elif kind == "ordinal":
            number_of[i] = _ORDINALS[w]
        if w in _UPDATE_CUES:  # "new", "now" ... may be cues and something else at once
            cues.add(w)
    clock_parts: set[str] = set()
    if number_of or times:
        for m in _CLOCK.finditer(rewritten):
            h, mins, ampm, h2, mins2 = m.groups()
            times.add(f"{int(h or h2)}:{mins or mins2 or '00'}{(ampm or '').lower()}")
            clock_parts.update(str(int(part)) for part in (h, mins, h2, mins2) if part is not None)
    numbers = frozenset(v for v in number_of.values() if v not in clock_parts)

    subject = None
    if n > 1 and lower[1] == "s" and "'" in text[: len(words[0]) + 2].replace("\u2019", "'"):
        subject = lower[0]  # "Wife's name", "Jolene's mother"
    elif n and lower[0] in _RELATIONS:
        subject = lower[0]  # "Sister has a dog"
    elif n > 1 and lower[0] in _DETERMINERS and lower[1] in _RELATIONS:
        subject = lower[1]  # "Their son has soccer"
    if subject is not None and n > 2 and lower[1] == "s" and lower[2] in _RELATIONS:
        subject = f"{subject} {lower[2]}"  # "Jolene's mother"

    written: dict[str, str] = {}
    content: set[str] = set()
    core: list[str] = []
    core_positive: list[str] = []
    for i, (s, w) in enumerate(zip(stems, lower, strict=True)):
        folded_word = number_of.get(i) or _SYNONYMS.get(s, s)
        if s not in _STOP and w not in _STOP:
            content.add(folded_word)
            written.setdefault(folded_word, w)
        written.setdefault(s, w)
        if w not in _FILLER:
            core.append(folded_word)
            if w not in _NEGATION_ONLY and not (w == "no" and i + 1 < n and lower[i + 1] == "longer"):
                core_positive.append(folded_word)
    folded = " ".join(lower)
    comparisons = frozenset(
        (a.lower(), b.lower()) for a, b in _COMPARE.findall(rewritten)) if _COMPARE_HINT.search(folded) else frozenset()
    return _Analysis(
        folded=folded,
        stems=tuple(stems),
        content=frozenset(content),
        negations=len(neg_words),
        neg_words=tuple(neg_words),
        numbers=numbers,
        times=frozenset(times),
        entities=frozenset(entities - times),
        subject=subject,
        first=lower[0] if words and words[0][:1].isupper() and subject is None else None,
        update_cues=frozenset(cues),
        comparisons=comparisons,
        written=written,
        core=tuple(core),
        core_positive=tuple(core_positive),
    )


def _has(stems: frozenset[str], phrase: tuple[str, ...]) -> bool:
    return all(s in stems for s in phrase)


def _antonym(old: _Analysis, new: _Analysis) -> tuple[str, str, frozenset[str]] | None:
    """The opposite words (as written, old then new) and their stems, if the texts hold a pair."""
    a, b = frozenset(old.stems), frozenset(new.stems)
    only_old = a - b
    for s in only_old:
        for xw, x, yw, y in _ANTONYMS.get(s, ()):
            if _has(a, x) and _has(b, y) and not _has(a, y) and not _has(b, x):
                return xw, yw, frozenset(x + y)
    for s in only_old:
        for p in _NEG_PREFIXES:
            if p + s in b and p + s not in a:
                return old.word(s), new.word(p + s), frozenset((s, p + s))
            if s.startswith(p) and s[len(p):] in b and len(s) - len(p) >= 3:
                return old.word(s), new.word(s[len(p):]), frozenset((s, s[len(p):]))
    return None


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / min(len(a), len(b))


def _slots(an: _Analysis) -> frozenset[str]:
    return an.entities | an.times | an.numbers


def _quote(values: Iterable[str]) -> str:
    return ", ".join(sorted(values)) or "-"


def _entities(an: _Analysis, other: _Analysis) -> frozenset[str]:
    """Capitalised words of ``an``, its first word included when the other text names it too."""
    if an.first is not None and (an.first in other.entities or an.first == other.first):
        return an.entities | {an.first}
    return an.entities


def _frame(an: _Analysis, slots: frozenset[str]) -> frozenset[str]:
    """The content words around the values (digits are values too: the "6" of "6 am")."""
    return frozenset(w for w in an.content if w not in slots and not any(c.isdigit() for c in w))


def _decide(old: _Analysis, new: _Analysis, similarity: float | None) -> PairVerdict:
    if old.folded == new.folded:
        return PairVerdict("duplicate", "same text")
    if old.subject != new.subject:
        for mine, theirs in ((old, new), (new, old)):
            who = None if mine.subject is None else mine.subject.split()[-1]
            if who is not None and (theirs.subject is not None or (
                    who in _RELATIONS and who not in theirs.folded.split()
                    and not (who in _SPOUSES and "married" in theirs.folded.split()))):
                return PairVerdict("unrelated", f"different subjects: {old.subject or '-'} / {new.subject or '-'}")

    old_ent, new_ent = _entities(old, new), _entities(new, old)
    slots = old_ent | new_ent | old.times | new.times | old.numbers | new.numbers
    frame_old, frame_new = _frame(old, slots), _frame(new, slots)
    overlap = _overlap(old.content, new.content)
    # The words around the values: "Is from Brazil" and "Is from Portugal" share an (empty) frame.
    frame = _overlap(frame_old, frame_new) if (frame_old or frame_new) else 1.0
    ant = _antonym(old, new)
    if ant is not None:
        rest_old = frozenset(w for w in old.content if w not in ant[2])
        rest_new = frozenset(w for w in new.content if w not in ant[2])
        if _overlap(rest_old, rest_new) >= ANTONYM_OVERLAP or not (rest_old and rest_new):
            return PairVerdict("contradiction", f"antonym: {ant[0]} / {ant[1]}")
    related = overlap >= MIN_OVERLAP or frame >= 0.99 or (similarity is not None and similarity >= RELATED_COSINE)
    if not related:
        cos = "" if similarity is None else f", cosine {similarity:.2f}"
        return PairVerdict("unrelated", f"little in common: word overlap {overlap:.2f}{cos}")

    if bool(old.negations) != bool(new.negations):
        side, words = ("new", new.neg_words) if new.negations else ("old", old.neg_words)
        return PairVerdict("contradiction", f"negation: {_quote(words)!s} in the {side} text only")
    for a, b in old.comparisons:
        if (b, a) in new.comparisons:
            return PairVerdict("contradiction", f"reversed comparison: {a} over {b} / {b} over {a}")

    cue = new.update_cues - old.update_cues
    changed: list[str] = []
    for name, x, y in (("number", old.numbers, new.numbers), ("date or time", old.times, new.times),
                       ("name or place", old_ent, new_ent)):
        if x - y and y - x:  # an old value is gone and a new one came
            changed.append(f"{name} {_quote(x - y)} -> {_quote(y - x)}")
    if changed:
        if cue:
            return PairVerdict("update", f"{'; '.join(changed)}, with '{sorted(cue)[0]}'")
        if frame < MIN_FRAME:
            # The values changed but so did what is said of them ("plays the cello on Sundays" /
            # "was born in Lisbon"): two facts, not one fact with a new value.
            return PairVerdict("unrelated", f"different facts around the values: {old.words(frame_old - frame_new)}"
                                            f" / {new.words(frame_new - frame_old)}")
        verbs = frozenset(old.stems) & frozenset(new.stems)
        if old_ent != new_ent and verbs & _MULTI_VALUED and not verbs & _SINGLE_VALUED:
            return PairVerdict("unrelated", f"another value of a many-valued fact: {_quote(new_ent - old_ent)}")
        return PairVerdict("contradiction", "changed " + "; ".join(changed))

    extra = new.content - old.content
    missing = old.content - new.content
    if cue and extra:
        return PairVerdict("update", f"'{sorted(cue)[0]}' with a new detail: {new.words(extra)}")
    if extra and len(missing) <= len(old.content) // 4 and (len(extra) >= 2 or _slots(new) - _slots(old)):
        return PairVerdict("update", f"new detail: {new.words(extra)}")
    if not extra or not missing:
        return PairVerdict("duplicate", "same content words" if not extra and not missing else "paraphrase")
    if similarity is not None and similarity >= DUPLICATE_COSINE:
        return PairVerdict("duplicate", f"paraphrase: cosine {similarity:.2f}")
    return PairVerdict("unrelated", f"different details: {old.words(missing)} / {new.words(extra)}")


def classify_pair(old: str, new: str, *, similarity: float | None = None) -> PairVerdict:
    """How memory ``new`` relates to the stored memory ``old``, by rules over both texts.

    ``similarity`` is the cosine of their embeddings when the caller has it: it only decides
    whether texts with few words in common are related, and whether a loose paraphrase is a
    duplicate. The rules never call a model; a pair costs a few tens of microseconds.

    Examples
    --------
    >>> classify_pair("Is allergic to peanuts", "Is not allergic to peanuts", similarity=0.95)
    PairVerdict(relation='contradiction', reason='negation: not in the new text only', source='rules')
    >>> classify_pair("Lives in Lyon", "Moved to Berlin in June").relation
    'update'
    >>> classify_pair("Has two kids", "Has 2 children").relation
    'duplicate'
    >>> classify_pair("Is allergic to peanuts", "Is allergic to cats").relation
    'unrelated'
    """
    if not isinstance(old, str) or not isinstance(new, str):
        from mindcore.errors import InvalidTypeError

        bad = old if not isinstance(old, str) else new
        raise InvalidTypeError(f"old, new: expected str, got {type(bad).__name__}")
    return _decide(_analyse(old), _analyse(new), similarity)


def classify_pairs(
    pairs: Iterable[tuple[str, str]], *, similarities: Iterable[float | None] | None = None
) -> list[PairVerdict]:
    """:func:`classify_pair` over many ``(old, new)`` pairs; each text is analysed once.

    >>> [v.relation for v in classify_pairs([("Likes jazz", "Dislikes jazz"), ("Has a cat", "Has a cat")])]
    ['contradiction', 'duplicate']
    """
    return _over_pairs(pairs, similarities, _decide)


def _over_pairs(
    pairs: Iterable[tuple[str, str]], similarities: Iterable[float | None] | None,
    decide: Callable[[_Analysis, _Analysis, float | None], PairVerdict],
) -> list[PairVerdict]:
    items = list(pairs)
    sims = [None] * len(items) if similarities is None else list(similarities)
    if len(sims) != len(items):
        from mindcore.errors import InvalidInputError

        raise InvalidInputError(f"similarities: expected {len(items)} values (one per pair), got {len(sims)}")
    cache: dict[str, _Analysis] = {}

    def analysed(text: str) -> _Analysis:
        an = cache.get(text)
        if an is None:
            an = cache[text] = _analyse(text)
        return an

    out = []
    for (old, new), sim in zip(items, sims, strict=True):
        if not isinstance(old, str) or not isinstance(new, str):
            from mindcore.errors import InvalidTypeError

            raise InvalidTypeError("pairs: expected (old, new) pairs of str")
        out.append(decide(analysed(old), analysed(new), sim))
    return out


#: The default of :func:`judge_pair`'s ``duplicate_cosine``.
JUDGE_DUPLICATE_COSINE = 0.92


def _judge(old: _Analysis, new: _Analysis, similarity: float | None, duplicate_cosine: float) -> PairVerdict:
    if old.core == new.core:
        return PairVerdict("duplicate", "same text" if old.folded == new.folded else "same words")
    if (bool(old.negations) != bool(new.negations) and old.core_positive and old.core_positive == new.core_positive):
        side, words = ("new", new.neg_words) if new.negations else ("old", old.neg_words)
        return PairVerdict("contradiction", f"negation of the same statement: {_quote(words)} in the {side} text only")
    guess = _decide(old, new, similarity)
    if (guess.relation == "duplicate" and old.content and old.content == new.content
            and old.negations == new.negations and _slots(old) == _slots(new)
            and similarity is not None and similarity >= duplicate_cosine):
        return PairVerdict("duplicate", f"same content words, cosine {similarity:.2f}")
    if guess.relation == "unrelated":
        return guess
    article = "an" if guess.relation[0] in "aeiou" else "a"
    return PairVerdict("unrelated", f"both kept: may be {article} {guess.relation} ({guess.reason})",
                       possible=guess.relation)


def judge_pair(old: str, new: str, *, similarity: float | None = None,
               duplicate_cosine: float = JUDGE_DUPLICATE_COSINE) -> PairVerdict:
    """What a write may do with memory ``new`` next to the stored ``old`` without a model: only
    what is certain (see the module docstring). ``duplicate`` for a near-verbatim repeat,
    ``contradiction`` for an explicit negation of the same statement, else ``unrelated``, with
    :func:`classify_pair`'s guess in ``possible`` when it is not ``unrelated``.

    Examples
    --------
    >>> judge_pair("Is allergic to peanuts", "Is not allergic to peanuts").relation
    'contradiction'
    >>> verdict = judge_pair("I have a pet cat named Tom", "I have a pet dog named Rex")
    >>> verdict.relation, verdict.possible
    ('unrelated', 'contradiction')
    >>> judge_pair("Has two kids", "has 2 children!").relation
    'duplicate'
    """
    return judge_pairs([(old, new)], similarities=[similarity], duplicate_cosine=duplicate_cosine)[0]


def judge_pairs(
    pairs: Iterable[tuple[str, str]], *, similarities: Iterable[float | None] | None = None,
    duplicate_cosine: float = JUDGE_DUPLICATE_COSINE,
) -> list[PairVerdict]:
    """:func:`judge_pair` over many ``(old, new)`` pairs; each text is analysed once.

    >>> [v.relation for v in judge_pairs([("Likes jazz", "Does not like jazz"), ("Lives in Lyon", "Lives in Berlin")])]
    ['contradiction', 'unrelated']
    """
    return _over_pairs(pairs, similarities, lambda old, new, sim: _judge(old, new, sim, duplicate_cosine))
