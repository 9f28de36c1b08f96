import pytest
from pydantic import BaseModel, Field

from reagent_local.errors import LLMOutputError, LLMTruncatedError
from reagent_local.runtime.llm import LLM, parse_json_output
from reagent_local.testing import ScriptedLLM


class Span(BaseModel):
    answer: str = Field(max_length=20)


def test_rules_win_over_the_queue_and_requests_are_recorded():
    llm = ScriptedLLM(responses=[{"answer": "queued"}])
    llm.add_rule({"answer": "ruled"}, schema="Span", contains="capital")
    out = llm.generate_json([{"role": "user", "content": "the capital?"}], Span)
    assert out.value.answer == "ruled"
    out = llm.generate_json([{"role": "user", "content": "other"}], Span)
    assert out.value.answer == "queued"
    assert [r.messages[-1]["content"] for r in llm.requests] == ["the capital?", "other"]
    assert isinstance(llm, LLM)


def test_rule_with_times_stops_firing():
    llm = ScriptedLLM()
    llm.add_rule({"answer": "once"}, times=1)
    llm.add_rule({"answer": "after"})
    answers = [llm.generate_json([{"role": "user", "content": "q"}], Span).value.answer for _ in range(3)]
    assert answers == ["once", "after", "after"]


def test_invalid_scripted_output_fails_like_a_model():
    llm = ScriptedLLM(responses=[{"answer": "x" * 50}])
    with pytest.raises(LLMOutputError) as err:
        llm.generate_json([{"role": "user", "content": "q"}], Span)
    assert "x" * 20 in err.value.raw


def test_empty_script_says_what_to_do():
    with pytest.raises(LLMOutputError, match="add a rule"):
        ScriptedLLM().generate_json([{"role": "user", "content": "q"}], Span)


def test_parse_json_output_distinguishes_truncation():
    with pytest.raises(LLMTruncatedError):
        parse_json_output('{"answer": "Par', Span, "length")
    with pytest.raises(LLMOutputError):
        parse_json_output("not json", Span, "stop")
    assert parse_json_output('{"answer": "Paris"}', Span, "stop").answer == "Paris"


def test_raw_newlines_inside_strings_are_accepted():
    # llama.cpp's JSON grammar allows a literal newline inside a string
    assert parse_json_output('{"answer": "Paris\nFrance"}', Span, "stop").answer == "Paris\nFrance"


def test_schemas_llama_cpp_cannot_compile_are_refused_before_the_call():
    from reagent_local.errors import SchemaError
    from reagent_local.runtime.llm import LlamaModel, check_grammar_limits

    class Essay(BaseModel):
        text: str = Field(max_length=4000)

    with pytest.raises(SchemaError, match="maxLength=4000"):
        check_grammar_limits(Essay.model_json_schema(), "Essay")
    # refused before the model file is even opened (it does not exist here)
    with pytest.raises(SchemaError):
        LlamaModel("/nonexistent.gguf").generate_json([{"role": "user", "content": "x"}], Essay)
    check_grammar_limits(Span.model_json_schema(), "Span")  # small fields pass


def test_span_probability_is_the_geometric_mean_of_the_value_tokens():
    import math

    from reagent_local.runtime.llm import span_probability

    raw = '{"answer": "Mara Lind", "passages": [1]}'
    tokens = [('{"', -2.0), ("answer", -5.0), ('":', -0.1), (' "', -1.0), ("Mara", math.log(0.5)),
              (" Lind", math.log(0.8)), ('",', -0.3), (' "passages": [1]}', -0.1)]
    assert span_probability(raw, tokens, "Mara Lind") == pytest.approx(math.sqrt(0.5 * 0.8))
    assert span_probability(raw, tokens, "Tom Hale") is None  # not in the output
    assert span_probability(raw, [], "Mara Lind") is None  # no probabilities reported
    assert span_probability(raw, [("{x", -1.0)], "Mara Lind") is None  # tokens that are not the output


def test_a_scripted_rule_can_report_how_sure_the_model_was():
    llm = ScriptedLLM()
    llm.add_rule({"answer": "Oslo"}, schema="Span", confidence=0.25)
    call = llm.generate_json([{"role": "user", "content": "where?"}], Span).call
    assert call.span_probability("Oslo") == pytest.approx(0.25)
    assert ScriptedLLM(responses=[{"answer": "Oslo"}]).generate_json(
        [{"role": "user", "content": "x"}], Span).call.span_probability("Oslo") is None
