"""Question-shape rules: named, documented, switchable, and recorded when they fire.

Importing this package registers every rule (see :mod:`.registry`); the roles consult
them by stage: the decomposer the ``plan-check`` and ``plan-reshape`` rules, the verifier
the ``check`` and ``doubt`` rules, the supervisor the ``trust`` rules, the assembler the
``assemble`` and ``constrain`` rules. Rules removed with their code are listed in ``REMOVED_RULES``.
"""

# importing the modules registers their rules, stage by stage
from . import plan_rules, answer_types, doubt_rules, assemble_rules, road_rules  # noqa: F401,I001
from .answer_types import answer_type_problem
from .registry import REMOVED_RULES, RULES, Firing, Rule, RuleSet, describe_rules, live_rules, resolve, rule

__all__ = ["REMOVED_RULES", "RULES", "Firing", "Rule", "RuleSet", "answer_type_problem", "describe_rules", "live_rules",
           "resolve", "rule"]
