"""The live state of one sub-question during a run (what the loop keeps between rounds)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..agents.assembler import StepResult
from ..core.evidence import Evidence, EvidencePassage
from ..agents.verifier import Attempt
from ..core.knowledge import Statement
from ..core.plan import SubQuestion


@dataclass
class Step:
    """One sub-question: its current question, evidence, attempts and accepted answer."""

    sub: SubQuestion
    question: str = ""  # with earlier answers substituted
    evidence: Evidence | None = None  # what the verifier is reading, then what the accepted answer came from
    attempts: list[Attempt] = field(default_factory=list)
    answer: str = ""
    statement: Statement | None = None  # the verifier's accepted statement
    cited: tuple[EvidencePassage, ...] = ()
    excluded: set[str] = field(default_factory=set)  # passage ids never to retrieve again
    seen: set[str] = field(default_factory=set)  # passage ids the step has read: a new search reads others first
    rejected: set[str] = field(default_factory=set)  # answers the supervisor discarded
    uncertain: bool = False
    done: bool = False
    fresh: bool = False  # solved again after a rollback or a challenge: fewer retries

    @property
    def index(self) -> int:
        return self.sub.index

    @property
    def label(self) -> str:
        """'step 2', as checkpoints and events name it (1-based)."""
        return f"step {self.sub.index + 1}"

    def start(self, question: str) -> None:
        """Begin (again) with the question as it reads now."""
        self.question, self.evidence, self.attempts = question, None, []
        self.answer, self.statement, self.cited, self.done, self.uncertain = "", None, (), False, False

    def accept(self, attempt: Attempt, statement: Statement | None, *, uncertain: bool = False) -> None:
        """The step is answered by this attempt."""
        self.answer, self.statement, self.evidence = attempt.candidate.answer, statement, attempt.evidence
        self.cited = attempt.candidate.cited or attempt.evidence.passages[:1]
        self.done, self.uncertain = True, uncertain

    def give_up(self) -> None:
        """The step has no answer."""
        self.answer, self.statement, self.evidence, self.cited = "unknown", None, None, ()
        self.done, self.uncertain = True, True

    def reopen(self, *, fresh: bool = True) -> None:
        """Solve the step again (after a global rollback or a challenge)."""
        self.done, self.fresh = False, fresh

    def built_on(self) -> tuple[str, tuple[EvidencePassage, ...]]:
        """This step's answer and the passages it was read from (what a later step using it builds on)."""
        return self.answer, self.cited

    def discard_answer(self) -> None:
        """The supervisor gave this step's answer up: never accept it again, nor its passages."""
        if self.answer:
            self.rejected.add(self.answer)
        self.excluded |= {p.id for p in self.cited}

    def result(self) -> StepResult:
        """What the assembler reads of this step."""
        return StepResult(self.sub.index, self.question, self.answer, self.statement, self.sub.depends_on)
