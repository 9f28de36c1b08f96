"""Spreadsheets as blocks: CSV/TSV with the standard library, .xlsx with openpyxl.

A table becomes one line a row, so the passage packer cuts it between rows and a
passage's ``lines`` are its rows (the sheet's own row numbers; a CSV's records, the header
being row 1): a citation reads ``sales.xlsx § Q3, rows 2-14``. When the first row looks
like a header (every cell filled with text, not a number), each row is written as
``name: value; name: value`` so that a passage cut from the middle still says what its
numbers are. An .xlsx sheet is a section (its name is the heading); formulas give their
last computed value (``data_only``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from typing import Any, Iterable, Sequence

from .doc_blocks import Block, Parsed
from .pdf_text import Unreadable, unligature


def _cell(value: Any) -> str:
    """A cell's value as text: whole floats without ``.0``, dates in ISO form, line breaks as spaces."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, (dt.datetime, dt.date, dt.time)):
        value = value.isoformat()
    return " ".join(unligature(str(value)).split())


def _is_header(cells: Sequence[str]) -> bool:
    filled = [c for c in cells if c]
    return len(filled) >= 2 and len(filled) == len(cells) and not any(_number(c) for c in filled)


def _number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
        return True
    except ValueError:
        return False


def table_block(rows: Iterable[tuple[int, Sequence[str]]], heading: tuple[str, ...] = ()) -> list[Block]:
    """(row number, cells) rows as blocks of one line a row, with their row numbers as lines."""
    header: list[str] | None = None
    lines: list[str] = []
    first = last = 0
    blocks: list[Block] = []

    def close() -> None:
        if lines:
            blocks.append(Block("\n".join(lines), heading, first, last))

    for number, raw in rows:
        cells = list(raw)
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            continue
        if header is None:
            header = cells if _is_header(cells) else []
            text = " | ".join(cells)
        elif header:
            text = "; ".join(f"{header[i] if i < len(header) else f'column {i + 1}'}: {c}"
                             for i, c in enumerate(cells) if c)
        else:
            text = " | ".join(cells)
        if lines and number != last + 1:  # a gap of empty rows: a block's lines stay its rows
            close()
            lines = []
        if not lines:
            first = number
        lines.append(text)
        last = number
    close()
    return blocks


def _sniff(sample: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return csv.excel_tab if sample.count("\t") > sample.count(",") else csv.excel


def csv_blocks(text: str) -> Parsed:
    """A CSV or TSV text (its delimiter sniffed) as one table: lines are its records, the header row 1."""
    dialect = _sniff(text[:8192])
    reader = csv.reader(io.StringIO(text), dialect)
    try:
        rows = [(number, [_cell(c) for c in row]) for number, row in enumerate(reader, 1)]
    except csv.Error as exc:
        raise Unreadable("damaged-file", f"not a readable CSV file ({exc})") from None
    return Parsed(None, table_block(rows))


def xlsx_blocks(data: bytes) -> Parsed:
    """An .xlsx workbook: every sheet a section headed by its name, lines its row numbers."""
    try:
        import openpyxl
    except ImportError:
        raise Unreadable("failed", "openpyxl is not installed: pip install openpyxl") from None
    from .office_text import open_zip

    open_zip(data, "an Excel").close()
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (KeyError, ValueError, TypeError, zipfile.BadZipFile, OSError) as exc:
        raise Unreadable("damaged-file", f"{type(exc).__name__}: {exc}"[:160]) from None
    try:
        blocks: list[Block] = []
        for sheet in book.worksheets:
            heading = (_cell(sheet.title),)
            rows = []
            for row in sheet.iter_rows():
                cells = [c for c in row if getattr(c, "row", None) is not None]
                if cells:
                    rows.append((cells[0].row, _row_cells(row)))
            sheet_blocks = table_block(rows, heading)
            if sheet_blocks:
                blocks.append(Block(heading[0], heading, is_heading=True))
                blocks.extend(sheet_blocks)
        title = _cell(book.properties.title) if book.properties is not None else ""
    finally:
        book.close()
    return Parsed(title or None, blocks)


def _row_cells(row: Sequence[Any]) -> list[str]:
    """A sheet row's cells as text, placed by column (read-only rows may start past column A)."""
    out: list[str] = []
    for cell in row:
        column = getattr(cell, "column", None)
        if isinstance(column, int):
            out.extend([""] * (column - 1 - len(out)))
        out.append(_cell(getattr(cell, "value", None)))
    return out
