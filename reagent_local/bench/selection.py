"""Which questions a run may draw from: ``--ids FILE`` keeps, ``--exclude-ids FILE`` drops.

An ids file has one question id per line; blank lines and lines starting with ``#``
are ignored. The filters keep the file order of the questions, so ``--n N --seed S``
then draws from the filtered list exactly as it draws from a whole file. Every id a
filter names must be a question of the file: an unknown id is an error, never
silently ignored (a split file of another dataset would otherwise select nothing).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, TypeVar

from ..errors import BenchRunError

SHOWN_UNKNOWN = 5  # unknown ids named in the error; the rest are counted
IdsSource = str | os.PathLike | Sequence[str]  # a file path, or the ids themselves
Q = TypeVar("Q")


@dataclass(frozen=True)
class IdList:
    """Question ids from a file (``file`` set) or given directly, with the sha256 of their source."""

    ids: tuple[str, ...]
    file: str | None
    sha256: str

    def describe(self) -> dict[str, Any]:
        """What config.json records about this list."""
        return {"file": self.file, "sha256": self.sha256, "count": len(self.ids)}


def parse_ids(text: str) -> list[str]:
    """The ids of an ids file's text: one a line, stripped, no blanks or # comments, first occurrence kept."""
    lines = (line.strip() for line in text.splitlines())
    return list(dict.fromkeys(line for line in lines if line and not line.startswith("#")))


def read_ids_file(path: str | os.PathLike[str], option: str = "--ids") -> IdList:
    """Read an ids file; a missing, unreadable or empty file is a BenchRunError naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BenchRunError(f"cannot read the {option} file {path} ({exc.strerror or exc})",
                            hint="pass a text file with one question id per line") from None
    try:
        ids = parse_ids(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise BenchRunError(f"the {option} file {path} is not UTF-8 text",
                            hint="pass a text file with one question id per line") from None
    if not ids:
        raise BenchRunError(f"the {option} file {path} lists no question ids",
                            hint="write one id per line (blank lines and lines starting with # are skipped)")
    return IdList(tuple(ids), str(path.resolve()), hashlib.sha256(data).hexdigest())


def as_id_list(source: IdsSource | None, option: str) -> IdList | None:
    """An ids file path (str or path-like) or a sequence of ids, as an IdList; None stays None."""
    if source is None:
        return None
    if isinstance(source, (str, os.PathLike)):
        return read_ids_file(source, option)
    ids = list(dict.fromkeys(str(i).strip() for i in source if str(i).strip()))
    if not ids:
        raise BenchRunError(f"{option} was given an empty list of question ids", hint="pass at least one id, or None")
    digest = hashlib.sha256("".join(f"{i}\n" for i in ids).encode("utf-8")).hexdigest()
    return IdList(tuple(ids), None, digest)


def check_known(wanted: IdList, known: set[str], option: str, file: Path) -> None:
    """Raise naming the first few ids of ``wanted`` that are not questions of ``file``, and how many."""
    unknown = [i for i in wanted.ids if i not in known]
    if not unknown:
        return
    shown = ", ".join(unknown[:SHOWN_UNKNOWN]) + (", ..." if len(unknown) > SHOWN_UNKNOWN else "")
    source = f" ({wanted.file})" if wanted.file else ""
    raise BenchRunError(
        f"{len(unknown)} of {len(wanted.ids)} {option} id(s){source} are not questions of {file}: {shown}",
        hint="check that the ids file belongs to this dataset file (MuSiQue drops unanswerable questions)",
    )


def filter_questions(questions: Sequence[Q], file: Path, *, ids: IdList | None = None,
                     exclude_ids: IdList | None = None) -> list[Q]:
    """The questions (in file order) whose id is in ``ids`` (all if None) and not in ``exclude_ids``."""
    known = {getattr(q, "id") for q in questions}
    for wanted, option in ((ids, "--ids"), (exclude_ids, "--exclude-ids")):
        if wanted is not None:
            check_known(wanted, known, option, file)
    keep = set(ids.ids) if ids is not None else known
    drop = set(exclude_ids.ids) if exclude_ids is not None else set()
    selected = [q for q in questions if getattr(q, "id") in keep and getattr(q, "id") not in drop]
    if not selected:
        raise BenchRunError(f"--exclude-ids leaves no question of {file} to draw from",
                            hint="exclude fewer ids, or check that the right files were passed")
    return selected


def selection_config(ids: IdList | None, exclude_ids: IdList | None) -> dict[str, Any]:
    """The ``ids`` and ``exclude_ids`` entries of config.json (None when a filter was not used)."""
    return {"ids": ids.describe() if ids else None, "exclude_ids": exclude_ids.describe() if exclude_ids else None}


def selection_slug(ids: IdList | None, exclude_ids: IdList | None) -> str:
    """A folder-name part for the filters: ``ids-<stem>``, ``minus-<stem>`` (a list has its sha instead)."""

    def name(lst: IdList) -> str:
        return Path(lst.file).stem if lst.file else lst.sha256[:8]

    parts = ([f"ids-{name(ids)}"] if ids else []) + ([f"minus-{name(exclude_ids)}"] if exclude_ids else [])
    return "-".join(parts)
