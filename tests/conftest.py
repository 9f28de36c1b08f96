"""Shared fixtures: paths to the shared data samples and to pulled models."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The shared data folder (../shared/data from the repo), or REAGENT_SHARED_DATA."""
    env = os.environ.get("REAGENT_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """Skip the test when the shared data samples are absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data samples not found at {path} (set REAGENT_SHARED_DATA)")
    return path


@pytest.fixture
def wiki_dump(shared_data: Path) -> Path:
    return shared_data / "wiki" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def pulled_model(name: str) -> Path:
    """Path of a pulled registry model, or skip with the command that pulls it."""
    from reagent_local.runtime import models

    known = models.find_known(name)
    models_dir = Path(os.environ.get("REAGENT_HOME", REPO)) / "models"
    path = models.model_path(known, models_dir)
    if not path.is_file():
        pytest.skip(f"model {known.name} not pulled: run `reagent models pull {known.name}`")
    return path


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def append_raw(ws, agent: str, kind: str, payload: dict):
    """Log an event as another (older, foreign) writer would: no typed body, any kind or payload."""
    return ws.log.append(ws.run_id, kind, agent=agent, payload=payload, time=ws.clock.tick())


@pytest.fixture
def driver(tmp_path: Path) -> dict:
    """The benchmark driver script (bench_support.DRIVER) written to tmp_path, loaded, with its tiny dataset."""
    from bench_support import DRIVER

    script = tmp_path / "driver.py"
    script.write_text(DRIVER, encoding="utf-8")
    module = runpy.run_path(str(script), run_name="bench_driver")
    data = tmp_path / "hotpot_tiny.json"
    module["write_dataset"](data)
    module["script"], module["data"] = script, data
    return module
