"""The HTML page without a browser: one self-contained file, escaped data, the rollbacks in it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser

import pytest

from reagent_local.errors import ReagentError
from reagent_local.core.log import EventLog
from reagent_local.trace import load_trace
from reagent_local.trace.html import embed_json, render_html, write_html
from reagent_local.core.workspace import Workspace
from scenario_runs import PLANTED, WRONG_CAPITAL, WRONG_STATE, rollback_run


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text inside each <script>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_data(self, data):
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "log.duckdb"
    with EventLog(path) as log:
        run_id = rollback_run(log)
        yield load_trace(log, run_id)


@pytest.fixture(scope="module")
def page(trace) -> str:
    return render_html(trace)


def parsed(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    return parser


def test_planted_markup_never_reaches_the_page_as_markup(page):
    assert PLANTED not in page
    assert "<img" not in page and "</script><script>window" not in page
    elements = parsed(page)
    assert [t for t, _ in elements.tags if t in ("img", "iframe", "object", "embed", "link")] == []
    assert len(elements.scripts) == 2  # the data block and the page's own script, nothing injected
    (data_attrs, data_text), (code_attrs, _) = elements.scripts
    assert data_attrs == {"type": "application/json", "id": "trace-data"} and "src" not in code_attrs
    assert not set(data_text) & {"<", ">", "&"}
    assert PLANTED in json.loads(data_text)["passages"]["1984 Summer Olympics#0"]["text"]


def test_data_block_round_trips_the_trace(page, trace):
    (_, data_text), _ = parsed(page).scripts
    assert json.loads(data_text) == json.loads(json.dumps(trace.to_dict()))


def test_the_page_holds_the_rollbacks_discarded_statements_and_conflict_set(page):
    (_, data_text), _ = parsed(page).scripts
    data = json.loads(data_text)
    scopes = {r["scope"]: r for r in data["rollbacks"]}
    assert scopes["local"]["checkpoint_label"] == "before step 1"
    assert scopes["global"]["checkpoint_label"] == "before step 4"
    discarded = [data["entries"][str(s)] for r in data["rollbacks"] for s in r["discarded"]]
    assert [e["text"].split("-> ")[-1] for e in discarded] == [WRONG_STATE, WRONG_CAPITAL]
    assert all(e["fate"] == "discarded" for e in discarded)
    assert sorted(data["conflict_sets"][0]["texts"]) == sorted([
        "What is the capital of California? -> Sacramento",
        f"Which city is the seat of the government of California? -> {WRONG_CAPITAL}"])
    assert {c["purpose"] for c in data["calls"]} == {"decompose", "answer", "reformulate", "assemble"}


def test_the_page_shows_the_channel_escalating_two_asserts_of_one_round(page):
    (_, data_text), _ = parsed(page).scripts
    data = json.loads(data_text)
    (escalation,) = [it for it in data["items"] if it["type"] == "escalate"]
    assert escalation["agent"] == "channel" and escalation["payload"]["source"] == "channel"
    assert sorted(s["value"] for s in escalation["payload"]["statements"]) == [WRONG_CAPITAL, "Sacramento"]
    round_item = next(it for it in data["items"] if it["seq"] == escalation["parent_seq"])
    carried = [it for it in data["items"] if it["type"] == "message" and it["round"] == round_item["round"]
               and it["kind"] == "assert"]
    assert len(carried) == 2  # the two conflicting asserts were delivered together
    assert data["conflict_sets"][0]["source"] == "channel"


def test_self_contained_no_network_and_only_its_own_script_may_run(page):
    urls = set(re.findall(r"https?://[^\s\"'()<>\\]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}  # a namespace name, never fetched
    assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", page))
    assert "@import" not in page and "@font-face" not in page
    elements = parsed(page)
    for tag, attrs in elements.tags:
        assert not ({"src", "href"} & set(attrs)), (tag, attrs)
    csp = next(a["content"] for t, a in elements.tags
               if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    script = elements.scripts[1][1]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp


def test_placeholders_in_run_text_are_not_expanded(tmp_path):
    with EventLog(tmp_path / "l.duckdb") as log:
        ws = Workspace.start(log, "{{script}} {{data}} <b>&amp;</b>?", {})
        ws.finish("{{style}}", "ok", {})
        page = render_html(load_trace(log, ws.run_id))
    assert page.count("use strict") == 1 and page.count(":root {") == 1
    assert "<title>reagent trace: {{script}} {{data}} &lt;b&gt;&amp;amp;&lt;/b&gt;?</title>" in page


def test_embed_json_escapes_every_character_that_could_open_markup():
    text = embed_json({"a": "</script><!-- & \u2028"})
    assert not set(text) & {"<", ">", "&", "\u2028"}
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


def test_write_html_writes_one_file_and_refuses_a_folder(trace, tmp_path):
    out = write_html(trace, tmp_path / "run.html")
    assert out.read_text(encoding="utf-8") == render_html(trace)
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]  # no temporary file left
    with pytest.raises(ReagentError, match="is a folder"):
        write_html(trace, tmp_path)
    with pytest.raises(ReagentError, match="does not exist"):
        write_html(trace, tmp_path / "missing" / "run.html")
