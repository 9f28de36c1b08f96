"""The benchmark methods on a scripted model and an in-memory retriever."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

from reagent_local.bench.methods import MethodContext, MethodResult
from reagent_local.bench.registry import METHODS, build_method, check_methods, register_method
from reagent_local.config import load_config
from reagent_local.errors import BenchRunError, LLMOutputError
from reagent_local.retrieval.passages import Passage
from reagent_local.testing import InMemoryIndex, Rule, ScriptedLLM

PARAGRAPHS = [
    ("Moving Pictures", "Moving Pictures is the eighth studio album by the Canadian rock band Rush."),
    ("Neil Peart", "Neil Peart was the drummer and lyricist of Rush. " + "He wrote many songs. " * 60),
    ("Toto", "Toto is an American rock band formed in 1977 in Los Angeles."),
    ("Rush (band)", "Rush was a Canadian rock band formed in Toronto in 1968."),
]
QUESTION = "Which band released Moving Pictures and had the drummer Neil Peart?"


def make_index(paragraphs: list[tuple[str, str]]) -> InMemoryIndex:
    index = InMemoryIndex()
    for n, (title, text) in enumerate(paragraphs):
        index.add(title, text, n)
    return index


def make_ctx(llm: ScriptedLLM, top_k: int = 2, rounds: int = 3) -> MethodContext:
    config = load_config({"retrieval.top_k": top_k, "retrieval.passage_chars": 120,
                          "pipeline.max_retrieval_rounds": rounds}, env={})
    return MethodContext(config, llm, retriever=make_index(PARAGRAPHS))


def test_closed_book_sends_no_passages() -> None:
    llm = ScriptedLLM(rules=[Rule({"answer": " Rush "}, schema="SpanAnswer")])
    result = build_method("closed-book", make_ctx(llm)).answer(QUESTION)
    assert result.prediction == "Rush"
    assert result.cited == [] and result.llm_calls == 1
    assert result.prompt_tokens > 0
    sent = llm.requests[0].messages[-1]["content"]
    assert QUESTION in sent and "Passages" not in sent


def test_rag_cites_top_k_and_cuts_passages() -> None:
    llm = ScriptedLLM(rules=[Rule({"answer": "Rush"}, schema="SpanAnswer", contains="Moving Pictures is")])
    ctx = make_ctx(llm, top_k=2)
    result = build_method("rag", ctx).answer(QUESTION)
    assert result.prediction == "Rush"
    assert [p.title for p in result.cited] == ["Neil Peart", "Moving Pictures"]
    sent = llm.requests[0].messages[-1]["content"]
    assert "[1] Neil Peart:" in sent and "[2] Moving Pictures:" in sent and "[3]" not in sent
    # the long Neil Peart paragraph is cut to passage_chars (120) characters
    peart_line = next(line for line in sent.splitlines() if line.startswith("[1]"))
    assert len(peart_line) == len("[1] Neil Peart: ") + 120


def test_model_output_error_becomes_an_error_result() -> None:
    llm = ScriptedLLM(rules=[Rule({"answer": "x" * 200}, schema="SpanAnswer")])  # over max_length
    result = build_method("rag", make_ctx(llm)).answer(QUESTION)
    assert result.prediction == ""
    assert result.error.startswith("LLMOutputError")
    assert result.llm_calls == 1 and len(result.cited) == 2


def test_ircot_retrieves_with_its_thought_until_it_answers_then_reads_everything() -> None:
    llm = ScriptedLLM(rules=[
        Rule({"thought": "Rush was formed in Toronto.", "answer": "Rush"}, schema="ReasoningStep", contains="1. "),
        Rule({"thought": "Which band was formed in Toronto in 1968?", "answer": ""}, schema="ReasoningStep"),
        Rule({"answer": "Rush"}, schema="SpanAnswer", contains="formed in Toronto in 1968"),
    ])
    ctx = make_ctx(llm, top_k=2)
    result = build_method("ircot", ctx).answer(QUESTION)
    assert result.prediction == "Rush" and result.llm_calls == 3
    assert [r.schema for r in llm.requests] == ["ReasoningStep", "ReasoningStep", "SpanAnswer"]
    assert ctx.retriever.queries == [QUESTION, "Which band was formed in Toronto in 1968?"]
    titles = [p.title for p in result.cited]
    assert titles[:2] == ["Neil Peart", "Moving Pictures"] and "Rush (band)" in titles[2:]
    first, second, read = (r.messages[-1]["content"] for r in llm.requests)
    # new passages are appended after the old ones: the second prompt extends the first's passage block
    block = first.split("\n\nSteps so far:")[0]
    assert second.startswith(block)
    assert "1. Which band was formed in Toronto in 1968?" in second
    # the reader sees every collected passage and not the chain of thought
    assert all(f"[{n}] {title}:" in read for n, title in enumerate(titles, 1))
    assert "Steps so far" not in read and "Toronto in 1968?" not in read


def test_ircot_stops_at_the_round_limit_and_still_reads() -> None:
    llm = ScriptedLLM(rules=[
        Rule({"thought": "Need more about Toto.", "answer": ""}, schema="ReasoningStep"),
        Rule({"answer": "Rush"}, schema="SpanAnswer"),
    ])
    ctx = make_ctx(llm, rounds=2)
    result = build_method("ircot", ctx).answer(QUESTION)
    assert result.prediction == "Rush"
    assert [r.schema for r in llm.requests] == ["ReasoningStep", "ReasoningStep", "SpanAnswer"]
    assert len(ctx.retriever.queries) == 3  # the question, then one search per unanswered step


def test_ircot_caps_the_passages_it_collects(monkeypatch: pytest.MonkeyPatch) -> None:
    from reagent_local.bench import ircot

    monkeypatch.setattr(ircot, "MAX_PASSAGES", 3)
    llm = ScriptedLLM(rules=[
        Rule({"thought": "Toto was formed in Los Angeles.", "answer": ""}, schema="ReasoningStep"),
        Rule({"answer": "Rush"}, schema="SpanAnswer"),
    ])
    result = build_method("ircot", make_ctx(llm, top_k=2, rounds=5)).answer(QUESTION)
    assert len(result.cited) == 3
    assert [r.schema for r in llm.requests] == ["ReasoningStep", "ReasoningStep", "SpanAnswer"]


def test_a_broken_reasoning_step_still_gets_an_answer_from_the_reader() -> None:
    llm = ScriptedLLM(rules=[
        Rule({"thought": "x" * 300, "answer": ""}, schema="ReasoningStep"),  # over max_length: invalid
        Rule({"answer": "Rush"}, schema="SpanAnswer"),
    ])
    result = build_method("ircot", make_ctx(llm)).answer(QUESTION)
    assert result.prediction == "Rush" and result.error is None and result.llm_calls == 2


@dataclass
class FakeAnswer:
    answer: str
    run_id: str
    uncertain: bool
    passages: list
    backtracks: dict
    llm_calls: int = 7
    prompt_tokens: int = 900
    completion_tokens: int = 60
    seconds: float = 1.5
    subquestions: list = field(default_factory=list)
    rules_fired: tuple = ("chain-last-step",)
    signals: tuple = ("two-roads",)
    answer_before_backtracking: str | None = "Yes"
    roads: dict | None = None
    trust: dict | None = field(default_factory=lambda: {"probability": 0.7, "label": "trusted"})


class FakePipeline:
    made: list = []

    def __init__(self, config, *, llm, retriever, log, kg=None, role_llms=None) -> None:
        self.config, self.llm, self.retriever, self.log, self.kg = config, llm, retriever, log, kg
        self.role_llms = dict(role_llms or {})
        FakePipeline.made.append(self)

    def ask(self, question: str) -> FakeAnswer:
        if "fail" in question:
            raise LLMOutputError("bad", raw="{")
        return FakeAnswer(" Rush ", "run-1", False, [Passage("Rush (band)#0", "Rush (band)", "Rush was ...")], {"local": 2})


@pytest.fixture
def fake_pipeline(monkeypatch: pytest.MonkeyPatch) -> type[FakePipeline]:
    FakePipeline.made = []
    import reagent_local.reasoning.wiring

    monkeypatch.setattr(reagent_local.reasoning.wiring, "Pipeline", FakePipeline)
    monkeypatch.setitem(sys.modules, "reagent_local.core.log", types.SimpleNamespace(EventLog=lambda path: ("log", path)))
    return FakePipeline


def test_reagent_adapter_maps_the_answer(fake_pipeline: type[FakePipeline], tmp_path) -> None:
    ctx = make_ctx(ScriptedLLM())
    ctx.log_path = tmp_path / "events.duckdb"
    local = build_method("reagent-local", ctx)
    both = build_method("reagent-both", ctx)
    # each with its twin with backtracking off (the answer without backtracking), sharing index and log
    assert [p.config.pipeline.backtracking for p in fake_pipeline.made] == ["local", "none", "both", "none"]
    assert fake_pipeline.made[0].log is fake_pipeline.made[1].log is fake_pipeline.made[2].log  # one event log per run
    assert fake_pipeline.made[1].retriever is fake_pipeline.made[0].retriever
    assert fake_pipeline.made[0].log == ("log", tmp_path / "events.duckdb")
    result = local.answer("Which band?")
    assert result.prediction == "Rush" and result.run_id == "run-1" and result.uncertain is False
    assert result.backtracks == {"local": 2, "global": 0}
    assert (result.llm_calls, result.prompt_tokens, result.completion_tokens) == (7, 900, 60)
    assert [p.title for p in result.cited] == ["Rush (band)"]
    assert result.rules_fired == ["chain-last-step"] and result.signals == ["two-roads"]
    assert result.answer_before_backtracking == "Yes"
    assert result.trust == {"probability": 0.7, "label": "trusted"}  # the trust score reaches the record
    assert result.without_backtracking.answer == "Rush" and result.without_backtracking.run_id == "run-1"
    failed = both.answer("this will fail")
    assert failed.prediction == "" and failed.error.startswith("LLMOutputError")


def test_registry_add_and_check() -> None:
    class Echo:
        name = "echo"

        def __init__(self, ctx: MethodContext) -> None:
            pass

        def answer(self, question: str) -> MethodResult:
            return MethodResult(prediction=question)

    register_method("echo-test", Echo)
    try:
        with pytest.raises(ValueError):
            register_method("echo-test", Echo)
        method = build_method("echo-test", make_ctx(ScriptedLLM()))
        assert method.name == "echo-test" and method.answer("hi").prediction == "hi"
        assert check_methods(["rag", "echo-test", "rag"]) == ["rag", "echo-test"]
    finally:
        METHODS.pop("echo-test")
    with pytest.raises(BenchRunError) as info:
        check_methods(["rag", "nope"])
    assert "nope" in str(info.value) and "ircot" in str(info.value)


def test_a_reagent_method_can_be_named_without_some_rules(fake_pipeline: type[FakePipeline], tmp_path) -> None:
    from reagent_local.bench.registry import ablated, check_methods
    from reagent_local.errors import BenchRunError
    from reagent_local.rules import RuleSet

    assert check_methods(["rag", "reagent-both-no-both-yes-no-compare-options"]) == [
        "rag", "reagent-both-no-both-yes-no-compare-options"]
    with pytest.raises(BenchRunError, match="unknown rule.*same-y"):
        check_methods(["reagent-both-no-same-y"])
    from reagent_local.bench.registry import ablation
    assert ablation("reagent-both-no-both-yes-no-compare-options") == ("reagent-both", ("both-yes", "compare-options"))
    assert ablation("reagent-none-no-off-subject") == ("reagent-none", ("off-subject",))
    assert ablation("reagent-both") is None and ablation("rag-no-both-yes") is None
    with pytest.raises(BenchRunError, match="unknown rule.*yes': yes"):
        ablation("reagent-both-no-yes")
    with pytest.raises(BenchRunError, match="unknown method"):
        check_methods(["rag-no-both-yes"])
    # a removed rule is refused with when and why it went; a name holding "-no-" is still read as one rule
    with pytest.raises(BenchRunError, match="method 'reagent-both-no-both-yes-no-yes-no-answer': the rule yes-no-answer "
                                            "was removed on 2026-12-07"):
        ablation("reagent-both-no-both-yes-no-yes-no-answer")
    with pytest.raises(BenchRunError, match=r"the rule same-x was removed on 2026-12-07.*\(docs/changelog.md\)"):
        check_methods(["reagent-none-no-same-x"])
    with pytest.raises(BenchRunError, match="--ablate option-snap: the rule option-snap was removed"):
        ablated(["reagent-both"], ["option-snap"])
    assert ablated(["rag", "reagent-both"], ["compare-options", "both-yes"]) == [
        "rag", "reagent-both", "reagent-both-no-compare-options", "reagent-both-no-both-yes"]
    ctx = make_ctx(ScriptedLLM())
    ctx.log_path = tmp_path / "events.duckdb"
    method = build_method("reagent-local-no-both-yes", ctx)
    assert method.name == "reagent-local-no-both-yes"
    config, twin = fake_pipeline.made[-2].config, fake_pipeline.made[-1].config
    assert config.pipeline.backtracking == "local" and not RuleSet(config.pipeline.rules).on("both-yes")
    assert twin.pipeline.backtracking == "none" and twin.pipeline.rules == config.pipeline.rules  # the same rules
