"""The six roles of one run, built together so they share the run's rules, checker and call ledger."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from ..agents.assembler import AnswerAssembler
from ..agents.controller import Controller
from ..agents.decomposer import QuestionDecomposer
from ..agents.retriever import RetrieverAgent, SearchIndex
from ..agents.supervisor import Supervisor
from ..agents.verifier import AGENT as VERIFIER, LLMJudge, Verifier
from .calls import CallLedger
from ..config import Config
from ..core.conflicts import ConflictChecker
from ..core.workspace import Workspace
from ..rules import RuleSet


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


def build_team(config: Config, calls: CallLedger, workspace: Workspace, rules: RuleSet, index: SearchIndex,
               kg: Any | None = None) -> Team:
    """The roles for one run; the verifier's LLM judge goes through the run's calls and logs its verdicts."""
    pipeline, retrieval = config.pipeline, config.retrieval
    controller = Controller(rules, max_rollbacks=pipeline.max_backtrack_depth, max_replans=pipeline.max_replans)
    checker = ConflictChecker(LLMJudge(calls), on_judgement=partial(workspace.record_judgement, VERIFIER))
    retriever = RetrieverAgent(index, calls, top_k=retrieval.top_k, mode=retrieval.mode,
                               passage_chars=retrieval.passage_chars, focus_chars=retrieval.focus_chars,
                               kg=kg if retrieval.use_kg else None)
    return Team(decomposer=QuestionDecomposer(calls, rules, pipeline.max_subquestions), retriever=retriever,
                verifier=Verifier(calls, checker, rules, min_confidence=pipeline.min_confidence),
                assembler=AnswerAssembler(calls, checker, rules),
                supervisor=Supervisor(checker, controller, calls, margin=pipeline.roads_margin,
                                      trust=pipeline.chain_trust),
                controller=controller, rules=rules)
