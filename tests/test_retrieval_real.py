"""The real embedder (all-MiniLM-L6-v2) on articles of the shared dump sample: Actrius comes first."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reagent_local.config import load_config
from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval.embed import Embedder
from reagent_local.retrieval.readers import read_documents

pytestmark = pytest.mark.slow  # loads the model and embeds a few hundred passages (about a minute on 2 busy cores)


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


def test_embedder_gives_normalised_384_d_vectors(embedder):
    vectors = embedder.encode(["Ventura Pons directed Actrius.", "Alabama's capital is Montgomery."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


def test_actrius_is_the_first_hybrid_hit(wiki_dump, tmp_path, embedder):
    docs = list(read_documents(wiki_dump, "wikixml"))
    short = sorted((d for d in docs if d.text and d.title != "Actrius"), key=lambda d: len(d.text))[:15]
    chosen = short + [d for d in docs if d.title == "Actrius"]
    source = tmp_path / "sample.jsonl"
    source.write_text("".join(json.dumps({"title": d.title, "text": d.text}) + "\n" for d in chosen), encoding="utf-8")
    config = load_config({"paths.home": str(tmp_path)}, env={})
    build_index(source, "real", config, progress=False, embedder=embedder)
    with Index.open("real", config, embedder=embedder) as index:
        for mode in ("hybrid", "dense", "sparse"):
            top = index.search("Who directed the film Actrius?", k=3, mode=mode)[0]
            assert top.passage.title == "Actrius", mode
        assert index.search("Who directed the film Actrius?", k=1)[0].passage.id == "Actrius#0"
