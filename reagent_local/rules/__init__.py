"""Question-shape rules: named, documented, switchable, and recorded when they fire.

Importing this package registers every rule (see :mod:`.registry`); the roles consult
them by stage: the decomposer the ``plan`` rules, the verifier the ``check`` rules, the
assembler the ``assemble`` and ``constrain`` rules.
"""

from . import plan_rules, answer_types, assemble_rules  # noqa: F401,I001  (registers the rules, stage by stage)
from .answer_types import answer_type_problem
from .registry import RULES, Firing, Rule, RuleSet, describe_rules, resolve, rule

__all__ = ["RULES", "Firing", "Rule", "RuleSet", "answer_type_problem", "describe_rules", "resolve", "rule"]
