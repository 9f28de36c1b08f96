"""The six roles of one run, built together so they share the run's rules, checker, budget and call ledger."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from ..agents.assembler import AnswerAssembler
from ..agents.controller import Budget, Controller
from ..agents.decomposer import QuestionDecomposer
from ..agents.retriever import RetrieverAgent, SearchIndex
from ..agents.supervisor import Supervisor
from ..agents.verifier import AGENT as VERIFIER, LLMJudge, Verifier
from ..agents.trust import TRUST_PATH, TrustModel, load_trust_model
from ..config import Config, PipelineConfig
from ..core.conflicts import ConflictChecker
from ..core.workspace import Workspace
from ..rules import RuleSet
from .calls import CallLedger


@dataclass
class Team:
    """Question decomposer, retriever, verifier, answer assembler, supervisor and controller."""

    decomposer: QuestionDecomposer
    retriever: RetrieverAgent
    verifier: Verifier
    assembler: AnswerAssembler
    supervisor: Supervisor
    controller: Controller
    rules: RuleSet


def trust_model_for(pipeline: PipelineConfig) -> TrustModel:
    """The supervisor's trust model: ``trust_file`` when set, else the package's."""
    path = pipeline.trust_file or TRUST_PATH
    return _cached_trust(str(path), path.stat().st_mtime_ns if path.exists() else 0)


@lru_cache(maxsize=8)
def _cached_trust(path: str, mtime_ns: int) -> TrustModel:
    """A trust model file read once per version of it."""
    return load_trust_model(path)


def build_team(config: Config, calls: CallLedger, workspace: Workspace, rules: RuleSet, index: SearchIndex,
               kg: Any | None = None, *, budget: Budget) -> Team:
    """The roles for one run; the controller owns the run's ``budget`` (the ledger charges every call to it),
    the verifier's LLM judge goes through the run's calls and logs its verdicts."""
    pipeline, retrieval = config.pipeline, config.retrieval
    controller = Controller(rules, budget=budget, max_rollbacks=pipeline.max_backtrack_depth,
                            max_retries=pipeline.max_backtrack_depth)
    checker = ConflictChecker(LLMJudge(calls), on_judgement=partial(workspace.record_judgement, VERIFIER))
    retriever = RetrieverAgent(index, calls, top_k=retrieval.top_k, mode=retrieval.mode,
                               passage_chars=retrieval.passage_chars, focus_chars=retrieval.focus_chars,
                               kg=kg if retrieval.use_kg else None)
    verifier = Verifier(calls, checker, rules, min_confidence=pipeline.min_confidence, local=pipeline.local_backtracking)
    supervisor = Supervisor(checker, controller, calls, margin=pipeline.roads_margin, trust=pipeline.chain_trust,
                            options_trust=pipeline.options_trust, rules=rules, trust_model=trust_model_for(pipeline))
    return Team(decomposer=QuestionDecomposer(calls, rules, pipeline.max_subquestions), retriever=retriever,
                verifier=verifier, assembler=AnswerAssembler(calls, rules), supervisor=supervisor,
                controller=controller, rules=rules)
