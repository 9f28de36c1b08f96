from pathlib import Path

import pytest

from reagent_local.config import load_config
from reagent_local.errors import ConfigError


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "reagent.toml"
    path.write_text(text)
    return path


def test_defaults_when_nothing_is_set(tmp_path):
    config = load_config(env={}, toml_path=write_toml(tmp_path, ""))
    assert config.llm.model == "qwen2.5-coder-1.5b"
    assert config.retrieval.top_k == 5
    assert config.pipeline.backtracking == "both"


def test_override_order_defaults_toml_env_cli(tmp_path):
    toml = write_toml(tmp_path, '[llm]\nmodel = "from-toml"\nmax_tokens = 100\n[retrieval]\ntop_k = 7\nmode = "sparse"\n')
    env = {"REAGENT_LLM_MODEL": "from-env", "REAGENT_RETRIEVAL_TOP_K": "9"}
    config = load_config({"llm.model": "from-cli", "retrieval.top_k": None}, env=env, toml_path=toml)
    assert config.llm.model == "from-cli"  # CLI beats env and TOML
    assert config.retrieval.top_k == 9  # env beats TOML; a CLI None does not override
    assert config.llm.max_tokens == 100  # TOML beats defaults
    assert config.retrieval.mode == "sparse"
    assert config.retrieval.rrf_k == 60  # untouched default


def test_home_from_env_moves_every_folder(tmp_path):
    config = load_config(env={"REAGENT_HOME": str(tmp_path)}, toml_path=write_toml(tmp_path, ""))
    assert config.paths.models == tmp_path / "models"
    assert config.paths.indexes == tmp_path / "indexes"
    assert config.paths.log == tmp_path / "reagent-log.duckdb"


@pytest.mark.parametrize(
    "toml, env, message",
    [
        ("[nope]\nx = 1\n", {}, "unknown section"),
        ("[llm]\nmodle = 'x'\n", {}, "unknown setting llm.modle"),
        ("", {"REAGENT_RETRIEVAL_TOP_K": "many"}, "retrieval.top_k"),
        ("", {"REAGENT_PIPELINE_BACKTRACKING": "sideways"}, "choose one of"),
        ("[llm\n", {}, "cannot read config file"),
        ("[pipeline]\nsignals_off = ['low-confidence']\n", {}, "has its own switch"),
        ("", {"REAGENT_PIPELINE_SIGNALS_OFF": "check-failed,nonsense"}, "no signal named 'nonsense'"),
    ],
)
def test_bad_values_are_reported_with_their_origin(tmp_path, toml, env, message):
    with pytest.raises(ConfigError, match=message):
        load_config(env=env, toml_path=write_toml(tmp_path, toml))


@pytest.mark.parametrize("toml, env, name, hint", [
    ("[pipeline]\nrouter = 'learned'\n", {}, r"router(_file)?", ("learned router was removed",)),
    ("", {"REAGENT_PIPELINE_ROUTER_FILE": "router.json"}, r"router(_file)?", ("learned router was removed",)),
    ("[pipeline]\nmax_replans = 1\n", {}, "max_replans", ("replanning", "removed")),
    ("", {"REAGENT_PIPELINE_MAX_REPLANS": "0"}, "max_replans", ("replanning", "removed")),
    ("[pipeline]\nread_trusted_chains = true\n", {}, "read_trusted_chains", ("trusted", "removed")),
    ("", {"REAGENT_PIPELINE_READ_TRUSTED_CHAINS": "false"}, "read_trusted_chains", ("trusted", "removed"))])
def test_a_removed_setting_says_it_was_removed(tmp_path, toml, env, name, hint):
    with pytest.raises(ConfigError, match=rf"pipeline\.{name} in .* is no longer a setting") as gone:
        load_config(env=env, toml_path=write_toml(tmp_path, toml))
    assert all(words in gone.value.hint for words in hint)


def test_an_old_runs_configuration_with_a_removed_setting_at_its_inert_value_still_rebuilds():
    from dataclasses import asdict

    from reagent_local.bench.ablate_baseline import rebuild_config
    from reagent_local.config import Config
    from reagent_local.errors import BenchRunError

    old = asdict(Config())
    old["pipeline"].update(router="off", router_file=None,  # a config.json written before the router went,
                           signals_off=["check-failed", "value-conflict", "broken-bridge", "unfounded-step"])
    assert rebuild_config(old).pipeline == Config().pipeline
    old["pipeline"]["router"] = "learned"  # answers the code can no longer give
    with pytest.raises(BenchRunError, match="pipeline.router .* no longer a setting"):
        rebuild_config(old)
    old["pipeline"].update(router="off", max_replans=0)  # written before replanning went, with it off
    assert rebuild_config(old).pipeline == Config().pipeline
    old["pipeline"]["max_replans"] = 1  # a new plan for a caught chain (or, before 7915b5c, for a failed step)
    with pytest.raises(BenchRunError, match="pipeline.max_replans = 1, which this code cannot run") as refused:
        rebuild_config(old)
    assert "replanning" in refused.value.hint and "baseline run at this commit" in refused.value.hint
    old["pipeline"].update(max_replans=0, read_trusted_chains=False)  # every config.json before 2026-12-07 says so
    assert rebuild_config(old).pipeline == Config().pipeline
    old["pipeline"]["read_trusted_chains"] = True  # the whole question read for trusted chains too
    with pytest.raises(BenchRunError, match="pipeline.read_trusted_chains = True, which this code cannot run") as refused:
        rebuild_config(old)
    assert "trusted" in refused.value.hint


def test_an_old_runs_configuration_without_a_setting_added_since_rebuilds_as_the_code_then_ran():
    from dataclasses import asdict

    from reagent_local.bench.ablate_baseline import rebuild_config
    from reagent_local.config import Config

    old = asdict(Config())
    del old["llm"]["prefill_wide_block"]  # a config.json written before wide prefill blocks
    assert rebuild_config(old).llm.prefill_wide_block == 0
    assert rebuild_config(asdict(Config())).llm.prefill_wide_block == Config().llm.prefill_wide_block == 256


def test_config_is_frozen(tmp_path):
    config = load_config(env={}, toml_path=write_toml(tmp_path, ""))
    with pytest.raises(Exception):
        config.llm.model = "x"  # type: ignore[misc]


def test_no_signal_is_left_to_silence(tmp_path):
    config = load_config(env={"REAGENT_PIPELINE_SIGNALS_OFF": ""}, toml_path=write_toml(tmp_path, ""))
    assert config.pipeline.signals_off == () == load_config(env={}, toml_path=write_toml(tmp_path, "")).pipeline.signals_off
    with pytest.raises(ConfigError, match="no signal named 'two_roads'") as unknown:
        load_config(env={"REAGENT_PIPELINE_SIGNALS_OFF": "two_roads"}, toml_path=write_toml(tmp_path, ""))
    assert "each with a setting of its own" in unknown.value.hint and "check-failed" in unknown.value.hint


@pytest.mark.parametrize("toml, env", [
    ("[pipeline]\nsignals_off = ['check-failed', 'value-conflict', 'broken-bridge', 'unfounded-step']\n", {}),
    ("[pipeline]\nsignals_off = ['check-failed']\n", {}),  # the old default, copied
    ("", {"REAGENT_PIPELINE_SIGNALS_OFF": "check-failed"}),
    ("", {"REAGENT_PIPELINE_SIGNALS_OFF": "check-failed,unfounded-step"}),
])
def test_a_removed_signal_named_as_silenced_is_accepted_and_changes_nothing(tmp_path, toml, env):
    from reagent_local.bench.provenance import config_id
    from reagent_local.bench.rundir import config_dict

    # the assembler's escalations and the retry of a failed check are gone: silencing one asks for what the code
    # always does now
    config = load_config(env=env, toml_path=write_toml(tmp_path, toml))
    default = load_config(env={}, toml_path=write_toml(tmp_path, ""))
    assert config.pipeline.signals_off == default.pipeline.signals_off == ()
    assert config_id(config_dict(config)) == config_id(config_dict(default))


def test_an_old_runs_signals_off_rebuilds_when_it_silenced_the_removed_signals_and_is_refused_when_they_ran():
    from dataclasses import asdict

    from reagent_local.bench.ablate_baseline import rebuild_config
    from reagent_local.config import Config
    from reagent_local.errors import BenchRunError

    old = asdict(Config())
    old["pipeline"].update(router="off", router_file=None,  # a config.json written before either removal
                           signals_off=["check-failed", "value-conflict", "broken-bridge", "unfounded-step"])
    assert rebuild_config(old).pipeline == Config().pipeline
    old["pipeline"]["signals_off"] = ["value-conflict", "broken-bridge", "unfounded-step"]  # check-failed live
    with pytest.raises(BenchRunError, match="ran with check-failed on: the verifier's retry of an answer that failed "
                                            "a check was removed") as refused:
        rebuild_config(old)
    assert "run the baseline at this commit" in refused.value.hint
    for ran, live in ((["check-failed", "value-conflict"], "broken-bridge, unfounded-step"),
                      (["check-failed"], "value-conflict, broken-bridge, unfounded-step"),  # the router says: old
                      (None, "value-conflict, broken-bridge, unfounded-step, check-failed")):  # before signals_off
        if ran is None:
            del old["pipeline"]["signals_off"]
        else:
            old["pipeline"]["signals_off"] = ran
        with pytest.raises(BenchRunError, match=f"ran with {live} on: the assembler's escalations") as refused:
            rebuild_config(old)
        assert "run the baseline at this commit" in refused.value.hint
    del old["pipeline"]["router"], old["pipeline"]["router_file"]  # written after the router went, before the
    old["pipeline"].update(max_replans=0, signals_off=["check-failed"])  # escalations: max_replans says so
    with pytest.raises(BenchRunError, match="ran with value-conflict, broken-bridge, unfounded-step on"):
        rebuild_config(old)
    old["pipeline"]["backtracking"] = "local"  # the escalations never ran without global backtracking
    assert rebuild_config(old).pipeline.backtracking == "local"
    old["pipeline"]["signals_off"] = []  # ... but check-failed ran with local backtracking, live
    with pytest.raises(BenchRunError, match="ran with check-failed on"):
        rebuild_config(old)
    old["pipeline"]["backtracking"] = "global"  # and only with it
    old["pipeline"]["signals_off"] = ["value-conflict", "broken-bridge", "unfounded-step"]
    assert rebuild_config(old).pipeline.backtracking == "global"
    between = asdict(Config())  # written after the escalations went, before check-failed: read_trusted_chains says so
    between["pipeline"].update(read_trusted_chains=False, signals_off=["check-failed"])
    assert rebuild_config(between).pipeline == Config().pipeline
    between["pipeline"]["signals_off"] = []  # check-failed switched back on
    with pytest.raises(BenchRunError, match="ran with check-failed on"):
        rebuild_config(between)
    today = asdict(Config())  # today's config.json never names a removed signal nor holds a removed setting
    assert today["pipeline"]["signals_off"] == () and "read_trusted_chains" not in today["pipeline"]
    assert rebuild_config(today).pipeline == Config().pipeline


def test_an_old_runs_rules_rebuild_when_they_left_the_removed_rules_off_and_are_refused_when_they_ran():
    from dataclasses import asdict

    from reagent_local.bench.ablate_baseline import rebuild_config
    from reagent_local.config import DEFAULT_RULES, Config
    from reagent_local.errors import BenchRunError
    from reagent_local.rules import REMOVED_RULES

    today = asdict(Config())  # the default rules name none of the removed ones
    assert rebuild_config(today).pipeline == Config().pipeline
    today["pipeline"]["rules"] = ["all", "-same-x", "-keep-named-parts"]  # switched off: dropped
    assert rebuild_config(today).pipeline.rules == ("all",)
    today["pipeline"]["rules"] = ["all"]  # written since the removals: every rule that remains
    assert rebuild_config(today).pipeline.rules == ("all",)
    today["pipeline"]["rules"] = ["none", "chain-last-step", "+same-x"]  # named on: it ran, whenever it was written
    with pytest.raises(BenchRunError, match=r"ran with the rule\(s\) same-x on: removed on 2026-12-07") as refused:
        rebuild_config(today)
    assert "run the baseline at this commit" in refused.value.hint
    before = asdict(Config())  # written before the removals (read_trusted_chains says so): "all" took them in
    before["pipeline"].update(read_trusted_chains=False, signals_off=["check-failed"], rules=["all", "-same-x"])
    with pytest.raises(BenchRunError, match=r"ran with the rule\(s\) keep-named-parts, yes-no-answer, number-answer, "
                                            r"place-or-name-answer, option-answer, option-match, option-snap on"):
        rebuild_config(before)
    before["pipeline"]["rules"] = list(DEFAULT_RULES)  # every run in docs/results since 5e32365
    assert rebuild_config(before).pipeline == Config().pipeline
    before["pipeline"]["rules"] = ["all", *(f"-{name}" for name in REMOVED_RULES)]  # all of them switched off
    assert rebuild_config(before).pipeline.rules == ("all",)
    del before["pipeline"]["rules"]  # before the rules were switchable: every one ran
    with pytest.raises(BenchRunError, match=r"ran with the rule\(s\) keep-named-parts, .*, option-snap on"):
        rebuild_config(before)


def test_reagent_models_points_every_home_at_one_models_folder(tmp_path):
    from reagent_local.config import models_origin

    shared = tmp_path / "shared-models"
    env = {"REAGENT_HOME": str(tmp_path / "home-a"), "REAGENT_MODELS": str(shared)}
    config = load_config(env=env, toml_path=write_toml(tmp_path, ""))
    assert config.paths.models == shared
    assert config.paths.indexes == tmp_path / "home-a" / "indexes"  # only the models move
    assert models_origin(config, env) == "REAGENT_MODELS"
    # the long name is the same setting; the same folder under both names is fine, two folders are not
    same = load_config(env={**env, "REAGENT_PATHS_MODELS_DIR": str(shared)}, toml_path=write_toml(tmp_path, ""))
    assert same.paths.models == shared
    with pytest.raises(ConfigError, match="two model folders"):
        load_config(env={**env, "REAGENT_PATHS_MODELS_DIR": str(tmp_path / "other")}, toml_path=write_toml(tmp_path, ""))


def test_models_origin_names_the_config_file_or_the_home(tmp_path):
    from reagent_local.config import models_origin

    toml = write_toml(tmp_path, f'[paths]\nmodels_dir = "{tmp_path / "m"}"\n')
    config = load_config(env={}, toml_path=toml)
    assert config.paths.models == tmp_path / "m"
    assert models_origin(config, {}, toml) == f"paths.models_dir in {toml}"
    home = load_config(env={"REAGENT_HOME": str(tmp_path)}, toml_path=write_toml(tmp_path, ""))
    assert models_origin(home, {"REAGENT_HOME": str(tmp_path)}) == "REAGENT_HOME (its models/ folder)"
