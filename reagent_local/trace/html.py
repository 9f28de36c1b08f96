"""The self-contained HTML page of a run: one file, inline CSS and JS, no network.

The trace goes into a ``<script type="application/json">`` block with ``<``, ``>`` and
``&`` written as ``\\u003c`` etc., so no text from a passage or a model can close the
block or start markup; the page's script builds the DOM with ``textContent`` only. A
Content-Security-Policy allows no network at all and only this page's own script and
style (by hash), as a second line of defence.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ReagentError
from .model import Trace

_PLACEHOLDER = re.compile(r"\{\{(title|csp|style|script|data)\}\}")
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def embed_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no '<', '>' or '&' characters at all."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group(0)], text)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def render_html(trace: Trace) -> str:
    """The page for one trace, as a string."""
    style, script = _asset("trace.css"), _asset("trace.js")
    if "</" in script or "</" in style:  # would end the inline element early
        raise AssertionError("trace.js / trace.css must not contain '</'")
    csp = (f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
           "img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'")
    values = {"title": html.escape(f"reagent trace: {trace.run.question[:120]}", quote=True), "csp": csp,
              "style": style, "script": script, "data": embed_json(trace.to_dict())}
    # one pass, so text inside the data can never be taken for another placeholder
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], _asset("page.html"))


def write_html(trace: Trace, path: str | Path) -> Path:
    """Write the page atomically (temporary file + rename); returns the path."""
    target = Path(path).expanduser()
    if target.is_dir():
        example = target / f"{trace.run.run_id}.html"
        raise ReagentError(f"{target} is a folder", hint=f"give a file name, e.g. {example}")
    if not target.parent.is_dir():
        raise ReagentError(f"the folder {target.parent} does not exist", hint="create it first or choose another path")
    page = render_html(trace)
    fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".html", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(page)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
