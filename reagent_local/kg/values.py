"""Turn one infobox field's wikitext into plain-text items: links, dates and lists resolved.

A field renders to *items* (a list splits at ``<br>``, bullets and list templates);
each item is a sequence of tokens: plain text, a :class:`Link` (target title and
visible text) or a :class:`DateValue` from a date template. References, comments,
images and decoration templates are dropped; templates we do not know are dropped
too and counted in :attr:`Renderer.dropped_templates` so the gaps can be measured.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import mwparserfromhell
from mwparserfromhell.nodes import (
    Comment, ExternalLink, HTMLEntity, Tag, Template, Text, Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

from ..dates import date_from_parts


@dataclass(frozen=True)
class Link:
    """A wikilink: canonical target title and the text a reader sees."""

    target: str
    display: str


@dataclass(frozen=True)
class DateValue:
    """A date from a template such as ``{{birth date|1809|2|12}}``."""

    iso: str
    display: str


Token = str | Link | DateValue
Item = list[Token]

_SKIP_NAMESPACES = {"file", "image", "media", "category", "wikipedia", "wp", "wikt", "wiktionary", "s", "commons"}
_LIST_TEMPLATES = {
    "ubl", "ublist", "unbulleted list", "unbulletedlist", "plainlist", "plain list", "flatlist",
    "flat list", "hlist", "bulleted list", "bulletedlist", "blist", "vunblist", "unordered list",
    "ordered list", "collapsible list", "br separated entries", "bulleted", "indented plainlist",
    "pagelist", "tree list", "enum",
}
_DATE_TEMPLATES = {
    "birth date", "birth date and age", "death date", "death date and age", "start date",
    "end date", "start date and age", "end date and age", "film date", "dts", "date", "dob",
    "bda", "birth year and age", "death year and age", "release date", "start and end dates",
    "death date and given age", "birthdate and age", "birth-date and age", "released",
}
# template name -> which positional parameter is the visible text (1-based; -1 = last)
_WRAPPERS = {
    "small": 1, "big": 1, "nowrap": 1, "nobr": 1, "nobold": 1, "noitalic": 1, "nobreak": 1,
    "smaller": 1, "larger": 1, "resize": -1, "lang": 2, "native name": 2, "native phrase": 2,
    "transl": -1, "abbr": 1, "nts": 1, "ntsh": 1, "center": 1, "small caps": 1, "smallcaps": 1,
    "sc": 1, "nihongo": 1, "marriage": 1, "married": 1, "url": 1, "sort": -1, "nowrap begin": 1,
    "avoid wrap": 1, "angbr": 1, "'": 1, "noitalics": 1, "em": 1, "strong": 1, "mvar": 1,
    "lang-rtl": 2, "start-date": 1, "end-date": 1, "sigfig": 1, "round": 1, "formatnum": 1, "nastaliq": 1, "script": 2, "linktext": 1, "plural": 1, "vr": 1,
}
_FLAG_TEMPLATES = {"flag", "flagcountry", "flagu", "flag country", "country", "ill", "interlanguage link"}
_LITERAL = {"•": " · ", "middot": " · ", "dot": " · ", "·": " · ", "snd": " – ", "spaced ndash": " – ",
            "ndash": "–", "mdash": "—", "nbsp": " ", "spaces": " ", "and": " and ", "-": "–"}
# Templates known to carry no value text (footnotes, icons, pronunciation, coordinates).
_SILENT = {
    "efn", "refn", "ref label", "sfn", "sfnp", "r", "citation needed", "cn", "fact", "coord",
    "flagicon", "increase", "decrease", "steady", "decrease positive", "increase negative",
    "plainlist", "endplainlist", "endflatlist", "end plainlist", "end flatlist", "audio",
    "respell", "update", "as of", "clarify", "dubious", "when", "which", "who", "by whom",
    "nbsp;", "lower", "spaced", "refnest", "note", "ref", "rp", "webarchive", "dead link",
    "inflation-fn", "decreasepositive", "increasenegative", "efn-ua", "efn-lr", "clear", "-", "break", "crossreference", "small caps all",
}
_BULLETS = re.compile(r"\n[ \t]*[*#:;]+")


def template_name(template: Template) -> str:
    """Normalised template name: lowercase, spaces, no ``Template:`` prefix."""
    name = str(template.name).split("<!--")[0].strip().replace("_", " ").lower()
    if name.startswith("template:"):
        name = name[len("template:"):]
    return " ".join(name.split())


def positional(template: Template) -> list[Wikicode]:
    """The template's positional parameters, in order."""
    return [p.value for p in template.params if not p.showkey]


def named(template: Template, key: str) -> str | None:
    """A named parameter's raw text, or None."""
    for p in template.params:
        if p.showkey and str(p.name).strip() == key:
            return str(p.value).strip()
    return None


def canonical_title(title: str) -> str:
    """Link target as a page title: no anchor, spaces for underscores, first letter upper."""
    title = title.split("#", 1)[0].replace("_", " ").strip().lstrip(":").strip()
    title = " ".join(title.split())
    return title[:1].upper() + title[1:]


class Renderer:
    """Renders field values to items; keeps a count of the templates it had to drop."""

    def __init__(self) -> None:
        self.dropped_templates: Counter[str] = Counter()

    def items(self, code: Wikicode | str) -> list[Item]:
        """Split a field's wikitext into items of tokens."""
        if isinstance(code, str):
            code = mwparserfromhell.parse(code)
        out: list[Item] = [[]]
        self._walk(code, out)
        return [item for item in out if any(_has_content(t) for t in item)]

    def text(self, code: Wikicode | str) -> str:
        """The whole field as one plain string (items joined by ', ')."""
        return ", ".join(t for t in (item_text(i) for i in self.items(code)) if t)

    def _walk(self, code: Wikicode, out: list[Item]) -> None:
        for node in code.nodes:
            if isinstance(node, Text):
                parts = _BULLETS.split(str(node))
                for i, part in enumerate(parts):
                    if i:
                        _break(out)
                    out[-1].append(part)
            elif isinstance(node, Wikilink):
                self._link(node, out)
            elif isinstance(node, Template):
                self._template(node, out)
            elif isinstance(node, Tag):
                self._tag(node, out)
            elif isinstance(node, HTMLEntity):
                out[-1].append(node.normalize().replace("\xa0", " "))
            elif isinstance(node, ExternalLink):
                if node.title is not None:
                    out[-1].append(self.text(node.title))
                elif not node.brackets:
                    out[-1].append(str(node.url))
            elif isinstance(node, Comment):
                continue
            # Headings, arguments ({{{x}}}) and anything else carry no value text.

    def _link(self, node: Wikilink, out: list[Item]) -> None:
        raw = str(node.title).strip()
        prefix = raw.lstrip(":").split(":", 1)[0].strip().lower() if ":" in raw else ""
        if prefix in _SKIP_NAMESPACES or (len(prefix) in (2, 3) and prefix.isalpha() and not raw.startswith(":")):
            return  # images, categories, interlanguage links
        target = canonical_title(raw)
        if node.text is not None:
            display = self.text(node.text) or re.sub(r"\s*\(.*\)$", "", target)
        else:
            display = raw.lstrip(":").replace("_", " ")
        if not target:  # [[#Section|text]]: a link within the page, keep its text
            out[-1].append(display)
        else:
            out[-1].append(Link(target, display.strip()))

    def _tag(self, node: Tag, out: list[Item]) -> None:
        tag = str(node.tag).strip().lower()
        if tag in {"ref", "gallery", "math", "timeline", "score", "references", "table", "imagemap",
                   "syntaxhighlight", "source", "templatedata", "chem", "ce", "graph", "mapframe"}:
            return
        if tag in {"br", "hr"}:
            _break(out)
            return
        if node.contents is None:
            return
        if tag == "nowiki":
            out[-1].append(str(node.contents))
            return
        if tag in {"li", "p", "div"}:
            _break(out)
            self._walk(node.contents, out)
            _break(out)
            return
        self._walk(node.contents, out)

    def _template(self, node: Template, out: list[Item]) -> None:
        name = template_name(node)
        params = positional(node)
        if name in _LIST_TEMPLATES:
            for value in params:
                _break(out)
                self._walk(value, out)
            _break(out)
        elif name in _DATE_TEMPLATES:
            date = _date_from_template(name, node, params)
            if date is not None:
                out[-1].append(date)
            elif params:
                self._walk(params[0], out)
        elif name in _WRAPPERS or name.startswith("lang-"):
            index = _WRAPPERS.get(name, 1)
            if params and len(params) >= abs(index):
                self._walk(params[index - 1 if index > 0 else index], out)
        elif name in _FLAG_TEMPLATES:
            if params:
                title = str(params[0]).strip()
                out[-1].append(Link(canonical_title(title), title))
        elif name in _LITERAL:
            out[-1].append(_LITERAL[name])
        elif name in {"convert", "cvt"}:
            out[-1].append(_convert_text(params))
        elif name == "based on" and params:
            self._walk(params[0], out)
            for author in params[1:2]:
                out[-1].append(" by ")
                self._walk(author, out)
        elif name in _SILENT or name.startswith(("cite", "ipa", "citation", "infobox", "lang-x")):
            return
        else:
            self.dropped_templates[name] += 1


def _break(out: list[Item]) -> None:
    if out[-1]:
        out.append([])


def _has_content(token: Token) -> bool:
    return not isinstance(token, str) or bool(token.strip(" ,;:·•*#\n\t"))


def _date_from_template(name: str, node: Template, params: list[Wikicode]) -> DateValue | None:
    parts = [str(p).strip() for p in params]
    if name in {"birth year and age", "death year and age"}:
        parts = parts[:1]
    else:
        parts = parts[:3]
    day_first = (named(node, "df") or "").lower() in {"y", "yes", "1", "true"}
    parsed = date_from_parts(parts, day_first=day_first)
    return None if parsed is None else DateValue(*parsed)


def _convert_text(params: list[Wikicode]) -> str:
    parts = [str(p).strip() for p in params]
    if len(parts) >= 4 and parts[1] in {"-", "to", "and", "–", "or"}:
        return f"{parts[0]}–{parts[2]} {parts[3]}"
    return " ".join(parts[:2])


_MARKUP = re.compile(r"'{2,}|\{\{|\}\}|\[\[|\]\]|</?[a-zA-Z][^<>]*>")  # + unbalanced HTML tags
_EMPTY_PARENS = re.compile(r"\(\s*[,;]?\s*\)|\[\s*\]")
_SPACES = re.compile(r"\s+")
_EDGE = " ,;:·•*#\n\t"


def clean_text(text: str) -> str:
    """Collapse whitespace, drop leftover quote markup, empty brackets and edge punctuation."""
    text = _MARKUP.sub("", text)
    text = _EMPTY_PARENS.sub("", text)
    text = _SPACES.sub(" ", text)
    text = re.sub(r"\s+([,;.)])", r"\1", text).replace("( ", "(")
    return text.strip(_EDGE)


def item_text(item: Item) -> str:
    """What a reader sees for one item, cleaned."""
    pieces = []
    for token in item:
        if isinstance(token, Link):
            pieces.append(token.display)
        elif isinstance(token, DateValue):
            pieces.append(token.display)
        else:
            pieces.append(token)
    return clean_text("".join(pieces))


def entity_links(item: Item, max_extra_words: int = 2) -> list[Link] | None:
    """The links of an item that names entities, or None when the item is prose.

    An item names entities when, outside parentheses, it is links plus at most a couple
    of words (``[[Hodgenville, Kentucky]], U.S.``, ``[[A]] and [[B]]``); parenthesised
    qualifiers such as ``([[Republican Party (United States)|R]])`` are ignored.
    """
    depth, links, outside = 0, [], []
    for token in item:
        if isinstance(token, DateValue):
            return None
        if isinstance(token, Link):
            if depth == 0:
                links.append(token)
            continue
        for ch in token:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            elif depth == 0:
                outside.append(ch)
    if not links:
        return None
    words = re.findall(r"[^\W_]+", "".join(outside))
    return links if len(words) <= max_extra_words else None
