"""Doubt rules: was an answer read in the wrong place? A doubt is no failure: it earns one retry.

A step that builds on an earlier answer ("Where was #1 born?") should be answered from
passages about that answer. The verifier asks the enabled ``doubt`` rules, in order;
the first that finds something doubts the answer (a local retry that reads the earlier
answer's own article first), and a doubt raised again lets the surest sound answer stand.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..core.evidence import BuiltOn, EvidencePassage, grounded_in
from .registry import rule

_LIST_PARTS = re.compile(r",\s*|\s+and\s+|\s*&\s*")  # the names in an answer that lists several


@rule("off-subject", "doubt")
def off_subject(cited: Sequence[EvidencePassage], about: Sequence[BuiltOn]) -> str | None:
    """A step's answer read where the answer it builds on is not named, or only where that answer was found.

    - its passages never name what the step asks about ("Where was #1 born?" answered from another
      person's article), and that has an article of its own to read instead;
    - it was read from the very passage the earlier answer came from, although that answer has an
      article of its own ("Where does #1 work?" answered from the film that names its director #1).

    Both need the article: the retry a doubt earns reads it. Without one, the retry would search the
    same passages again, and the doubt would cost a retry that cannot find a better place to read.
    """
    readable = [b for b in about if b.article]
    if not cited or not readable:
        return None
    titles = ", ".join(dict.fromkeys(p.title for p in cited))
    texts = [f"{p.title}: {p.text}" for p in cited]
    names = [part for b in about for part in _LIST_PARTS.split(b.answer) if part.strip()]  # "A and B": either
    if not any(grounded_in(name, texts) for name in names):
        return f"the answer was read from {titles}, which never names {readable[0].answer!r}"
    for built_on in about:
        if built_on.article and all(p.id in built_on.read_from and p.title != built_on.article for p in cited):
            return (f"the answer was read from {titles}, where {built_on.answer!r} was found, not from the "
                    f"article on {built_on.article}")
    return None
