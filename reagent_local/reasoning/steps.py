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
    kept: Attempt | None = None  # the attempt whose answer the step accepted
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
        self.kept = None

    def accept(self, attempt: Attempt, statement: Statement | None, *, uncertain: bool = False) -> None:
        """The step is answered by this attempt."""
        self.answer, self.statement, self.evidence = attempt.candidate.answer, statement, attempt.evidence
        self.kept = attempt
        self.cited = attempt.candidate.cited or attempt.evidence.passages[:1]
        self.done, self.uncertain = True, uncertain

    def give_up(self) -> None:
        """The step has no answer."""
        self.answer, self.statement, self.evidence, self.cited, self.kept = "unknown", None, None, (), None
        self.done, self.uncertain = True, True

    def in_doubt(self, min_confidence: float) -> bool:
        """Local backtracking did not make the step sure: it has no usable answer, or it was retried and kept an
        answer the model was unsure of (below ``min_confidence``) or read where the step's subject is not named."""
        if self.uncertain:
            return True
        kept = self.kept
        return kept is not None and len(self.attempts) > 1 and (
            kept.confidence < min_confidence or bool(kept.check.doubts))

    def doubt(self) -> str:
        """Why the step is in doubt, in the words of its checks."""
        kept = self.kept or (self.attempts[-1] if self.attempts else None)
        if kept is None:
            return "nothing was found"
        return "; ".join(kept.check.reasons()) or f"the model was unsure of it (confidence {kept.confidence:.2f})"

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
