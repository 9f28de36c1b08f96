"""Reduce MediaWiki wikitext to plain text with mwparserfromhell.

Removed: templates (infoboxes, citations, navboxes), tables, references, files and
images, categories, interlanguage links, comments, magic words, and the
link-list sections at the end of an article (References, External links, ...).
Kept: link text, bold/italic text without the quotes, list items, and section
headings as lines of their own.
"""

from __future__ import annotations

import re

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument,
    Comment,
    ExternalLink,
    Heading,
    HTMLEntity,
    Node,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

# Tags whose whole content is dropped (not prose, or markup-heavy).
_DROP_TAGS = frozenset(
    {
        "ref", "references", "table", "gallery", "math", "chem", "timeline", "imagemap", "score",
        "syntaxhighlight", "source", "graph", "mapframe", "maplink", "templatedata", "templatestyles",
        "noinclude", "includeonly", "hiero", "ce", "inputbox", "categorytree", "indicator",
    }
)
_NEWLINE_TAGS = frozenset({"br", "p", "div", "li", "dt", "dd", "hr", "tr", "blockquote"})
# Link prefixes that are not visible links (namespaces whose links render as media or metadata).
_HIDDEN_PREFIXES = frozenset({"file", "image", "media", "category", "wikipedia", "wp", "wiktionary", "commons"})
_INTERWIKI = re.compile(r"^[a-z]{2,3}(-[a-z]+)?$")  # de:, zh-yue:, simple: is handled below
# Sections that are lists of links or sources, not article prose.
_DROP_SECTIONS = frozenset(
    {
        "references", "external links", "see also", "further reading", "notes", "bibliography",
        "sources", "citations", "footnotes", "notes and references", "works cited", "reference",
    }
)
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_LEFTOVER_MARKUP = re.compile(r"'{2,}|\[\[|\]\]|\{\{|\}\}|<[^>\n]{0,200}>")
_EMPTY_PARENS = re.compile(r"\(\s*[,;:]?\s*\)")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_TABLE_LINE = re.compile(r"^\s*(\{\||\|\}|\|-|\|\+|!)")


def _is_hidden_link(title: str) -> bool:
    """True for [[File:..]], [[Category:..]], [[de:..]]; False for [[:Category:..]] (a visible link)."""
    title = title.strip()
    if title.startswith(":") or ":" not in title:
        return False
    prefix = title.split(":", 1)[0].strip().lower()
    return prefix in _HIDDEN_PREFIXES or prefix == "simple" or bool(_INTERWIKI.match(prefix))


def _render(code: Wikicode) -> str:
    return "".join(_render_node(node) for node in code.nodes)


def _render_node(node: Node) -> str:
    if isinstance(node, Text):
        return str(node.value)
    if isinstance(node, (Template, Comment, Argument)):
        return ""
    if isinstance(node, HTMLEntity):
        return node.normalize()
    if isinstance(node, Wikilink):
        title = str(node.title)
        if _is_hidden_link(title):
            return ""
        if node.text is not None:
            return _render(node.text)
        return title.lstrip(":").split("#", 1)[0] or title.lstrip(":")
    if isinstance(node, ExternalLink):
        return _render(node.title) if node.title is not None else ""
    if isinstance(node, Heading):
        return "\n" + _render(node.title).strip() + "\n"
    if isinstance(node, Tag):
        name = str(node.tag).strip().lower()
        if name in _DROP_TAGS:
            return ""
        inner = _render(node.contents) if node.contents is not None and not node.self_closing else ""
        if name in _NEWLINE_TAGS:
            return "\n" + inner
        return inner
    return ""  # unknown node kinds carry markup, never prose


def _drop_link_sections(code: Wikicode) -> None:
    """Remove the References / External links / See also sections with their content."""
    for section in code.get_sections(levels=[2], include_lead=False):
        headings = section.filter_headings(recursive=False)
        if headings and str(headings[0].title).strip().lower() in _DROP_SECTIONS:
            try:
                code.remove(section)
            except ValueError:  # already gone with an enclosing section
                pass


def _clean_lines(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        if _TABLE_LINE.match(line):
            continue  # a table the parser could not recognise (unbalanced markup)
        line = _MAGIC_WORD.sub("", line)
        line = _LEFTOVER_MARKUP.sub("", line)
        line = _EMPTY_PARENS.sub("", line)
        line = _SPACE_BEFORE_PUNCT.sub(r"\1", line)
        line = re.sub(r"[ \t\u00a0]+", " ", line).strip()
        line = line.lstrip("*#:; ").strip() if line[:1] in "*#:;" else line
        if line and any(ch.isalnum() for ch in line):
            lines.append(line)
    return "\n".join(lines)


def strip_wikitext(wikitext: str) -> str:
    """Plain text of an article's wikitext: one paragraph, heading or list item a line."""
    code = mwparserfromhell.parse(wikitext)
    _drop_link_sections(code)
    return _clean_lines(_render(code))
