"""A Jupyter notebook (.ipynb, nbformat 4) as blocks: its cells in order, a block's lines its cell numbers.

Markdown cells are parsed as Markdown (``doc_blocks``) and their headings set one heading
path across the notebook; a code cell is its source followed by its text outputs (streams
and ``text/plain`` results, cut to ``OUTPUT_CHARS``). Cells are numbered from 1 as they
stand in the file, so a citation reads ``analysis.ipynb § Results, cells 7-9``.
"""

from __future__ import annotations

import json
import re

from .doc_blocks import Block, HeadingPath, Parsed, heading_title, markdown_blocks
from .pdf_text import Unreadable

OUTPUT_CHARS = 2000  # a cell's text output beyond this is a dump, not prose
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s")


def _source(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _outputs(cell: dict) -> str:
    parts: list[str] = []
    for output in cell.get("outputs") or []:
        if not isinstance(output, dict):
            continue
        if output.get("output_type") == "stream":
            parts.append(_source(output.get("text")))
        elif isinstance(output.get("data"), dict) and "text/plain" in output["data"]:
            parts.append(_source(output["data"]["text/plain"]))
    text = "".join(parts).strip()
    return text[:OUTPUT_CHARS] + (" ..." if len(text) > OUTPUT_CHARS else "")


def ipynb_blocks(text: str) -> Parsed:
    """The title and blocks of a notebook's JSON text."""
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unreadable("damaged-file", f"not JSON ({exc.msg} at line {exc.lineno})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise Unreadable("damaged-file", "no cells (nbformat 4 is read)")
    path = HeadingPath()
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            continue
        source = _source(cell.get("source"))
        if cell.get("cell_type") == "markdown":
            lines = source.split("\n")
            for block in markdown_blocks(source).blocks:
                if block.is_heading:
                    atx = _ATX.match(lines[block.first - 1]) if block.first else None
                    level = len(atx.group(1)) if atx else (1 if "=" in lines[min(block.last, len(lines)) - 1] else 2)
                    headings.append((level, block.text))
                    blocks.append(Block(block.text, path.enter(level, block.text), number, number, is_heading=True))
                else:
                    blocks.append(Block(block.text, path.path, number, number))
        elif cell.get("cell_type") == "code" and source.strip():
            output = _outputs(cell)
            body = source.strip("\n") + (f"\n\nOutput:\n{output}" if output else "")
            blocks.append(Block(body, path.path, number, number))
        elif cell.get("cell_type") == "raw" and source.strip():
            blocks.append(Block(source.strip("\n"), path.path, number, number))
    meta = notebook.get("metadata") if isinstance(notebook.get("metadata"), dict) else {}
    title = meta.get("title") if isinstance(meta.get("title"), str) else None
    return Parsed(title or heading_title(headings), blocks)
