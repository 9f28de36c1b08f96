"""Passages cut to the sentences that matter for a query.

Prefill is most of a question's cost on a laptop (about 100-160 prompt tokens a second for the
1.5B model on 2 cores), and the passages are most of every reading prompt. A long passage is cut to
its first sentence (which names its subject and, in an encyclopedia, most often holds its
dates) and the sentences that share the most words with the query, in their own order,
within a character budget; a short passage is shown whole. A query word the first sentence
already shows (most often the subject's name) does not rank the others: a sentence that
repeats the title would otherwise win over the one holding the fact asked for.
"""

from __future__ import annotations

import re

from ..text import strip_accents

_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_WORD = re.compile(r"[^\W_]+")
# words before a period that do not end a sentence: titles, initials and common abbreviations
_NOT_AN_END = re.compile(r"(?:\b[A-Z]|\b(?:Mr|Mrs|Ms|Dr|Prof|St|Sr|Jr|Mt|Ft|Gen|Col|Lt|Sgt|Capt|Rev|Hon|No|Vol|vs|Co"
                         r"|Inc|Ltd|Corp|Bros|Jan|Feb|Mar|Apr|Aug|Sept?|Oct|Nov|Dec|ca|approx|U\.S|U\.K|D\.C))$")
_STOPWORDS = frozenset("""
a an the and or but of in on at to for from by with as is are was were be been being has have had do does did
what which who whom whose when where why how that this these those it its his her their there than then also
into onto over under about after before between during both either each other same such not no yes one two
""".split())
GAP = " … "


def sentences(text: str) -> list[str]:
    """The text's sentences (initials such as "J. M." and abbreviations such as "St." do not end one)."""
    out, start = [], 0
    for match in _BOUNDARY.finditer(text):
        if _NOT_AN_END.search(text[start:match.start()]):
            continue
        out.append(text[start:match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _terms(text: str) -> set[str]:
    """Content words, accent-free, lowercased, cut to five letters (a crude stem: 'directed' ~ 'director')."""
    return {w[:5] for w in _WORD.findall(strip_accents(text).lower()) if w not in _STOPWORDS and len(w) > 2 or w.isdigit()}


def focus(text: str, query: str, limit: int, shown: str = "") -> str:
    """The passage on one line, cut to at most about ``limit`` characters of the sentences that matter to ``query``.

    A passage read again (``shown``: what was read of it before) shows the sentences the first
    view cut before those it showed: a step whose answer failed its check reads its subject's
    article further, where a birthplace or an employer is often told after the dates.
    """
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    parts = sentences(line)
    if len(parts[0]) >= limit or len(parts) == 1:
        return _cut(line, limit)
    terms = [_terms(s) for s in parts]
    wanted = {w for w in _terms(query) if not _shared(terms[0], {w})}  # words already shown guide nothing
    overlap = [_shared(t, wanted) for t in terms]
    seen = " ".join(shown.split())
    chosen, budget = {0}, limit - len(parts[0])
    # (unread sentences first,) the sentences sharing most words with the query first, then the rest in
    # order, while they fit
    order = sorted(range(1, len(parts)), key=lambda i: (bool(seen) and parts[i] in seen, -overlap[i], i))
    for i in order:
        if len(parts[i]) + len(GAP) <= budget:
            chosen.add(i)
            budget -= len(parts[i]) + len(GAP)
    pieces, previous = [], -1
    for i in sorted(chosen):
        if pieces and i != previous + 1:
            pieces.append(GAP.strip())
        pieces.append(parts[i])
        previous = i
    shown = " ".join(pieces)
    return shown if previous == len(parts) - 1 else shown + " ..."


def _shared(terms: set[str], wanted: set[str]) -> int:
    """How many wanted terms the sentence has; one may be the other's prefix ('die' ~ 'died')."""
    return sum(any(t.startswith(w) or w.startswith(t) for t in terms) for w in wanted)


def _cut(line: str, limit: int) -> str:
    cut = line[:limit].rsplit(" ", 1)[0]
    return cut + " ..."
