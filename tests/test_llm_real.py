"""The llama.cpp layer with a real GGUF model (SmolLM2-135M): no fakes."""


import pytest
from pydantic import BaseModel, Field

from conftest import pulled_model
from reagent_local.errors import ChatTemplateError, LLMTruncatedError, ModelIntegrityError
from reagent_local.runtime.llm import LlamaModel

pytestmark = pytest.mark.slow


class City(BaseModel):
    name: str = Field(max_length=40)
    country: str = Field(max_length=40)
    population_millions: float


MESSAGES = [
    {"role": "system", "content": "You answer with JSON only."},
    {"role": "user", "content": "Give the name, country and population in millions of the capital of France."},
]


@pytest.fixture(scope="module")
def smol() -> LlamaModel:
    model = LlamaModel(pulled_model("smollm2-135m"), n_ctx=1024, seed=7)
    yield model
    model.close()


def test_schema_constrained_call_returns_a_valid_object(smol):
    result = smol.generate_json(MESSAGES, City, max_tokens=120)
    assert isinstance(result.value, City)
    assert result.call.prompt_tokens > 10 and result.call.completion_tokens > 0
    assert result.call.seconds > 0 and result.call.model_id == smol.model_id
    assert City.model_validate_json(result.call.raw) == result.value


def test_too_small_token_limit_raises_truncation_with_raw_text(smol):
    with pytest.raises(LLMTruncatedError) as err:
        smol.generate_json(MESSAGES, City, max_tokens=4)
    assert err.value.raw.startswith("{")  # the partial object is kept for the user
    assert "token limit" in str(err.value)


def test_temperature_zero_with_a_seed_is_deterministic(smol):
    first = smol.generate_json(MESSAGES, City, max_tokens=120, temperature=0.0, seed=3)
    second = smol.generate_json(MESSAGES, City, max_tokens=120, temperature=0.0, seed=3)
    assert first.call.raw == second.call.raw


def test_corrupt_file_is_refused_at_load(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a model")
    with pytest.raises(ModelIntegrityError, match="not a GGUF"):
        LlamaModel(bad).generate_json(MESSAGES, City)


def test_truncated_gguf_is_refused_with_a_hint(tmp_path):
    src = pulled_model("smollm2-135m")
    cut = tmp_path / "cut.gguf"
    with open(src, "rb") as handle:
        cut.write_bytes(handle.read(2_000_000))
    with pytest.raises(ModelIntegrityError, match="cut.gguf .*truncated or damaged"):
        LlamaModel(cut).load()


def test_model_without_chat_template_is_refused(tmp_path, monkeypatch):
    model = LlamaModel(pulled_model("smollm2-135m"), n_ctx=512)
    llama = model.load()
    # Simulate a GGUF whose metadata lacks a chat template: reload with it removed.
    model.close()
    import llama_cpp

    real_init = llama_cpp.Llama.__init__

    def init_without_template(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.metadata.pop("tokenizer.chat_template", None)

    monkeypatch.setattr(llama_cpp.Llama, "__init__", init_without_template)
    with pytest.raises(ChatTemplateError, match="chat format"):
        LlamaModel(pulled_model("smollm2-135m"), n_ctx=512).load()
    # with an explicit format it loads
    explicit = LlamaModel(pulled_model("smollm2-135m"), n_ctx=512, chat_format="chatml")
    assert explicit.load() is not None
    explicit.close()
    assert llama is not None


def test_an_option_schema_lets_the_model_say_only_an_option(smol):
    from reagent_local.agents.schemas import option_answer

    options = ("The Tallows", "Red Kite, Inc.")
    result = smol.generate_json(
        [{"role": "user", "content": "Name a colour, then a city, then answer: which band is older? JSON only."}],
        option_answer(options), max_tokens=30)
    assert result.value.answer in options  # the grammar offered nothing else, whatever the prompt asked


def test_options_with_quotes_and_backslashes_make_a_grammar_llama_cpp_parses(smol):
    # llama-cpp-python 0.3.36 escaped these into a grammar llama.cpp refused, and the sampling segfaulted
    from reagent_local.agents.schemas import option_answer

    options = ('I Cannot Say "Farewell"', "C:\\Path", "Plain")
    result = smol.generate_json([{"role": "user", "content": "Pick one. JSON only."}], option_answer(options),
                                max_tokens=30)
    assert result.value.answer in options  # given back as written, quotes and backslash included
