"""Channel: typed messages, rounds, merge, escalation of concurrent conflicts, rejects, logging."""

from __future__ import annotations

import pytest

from reagent_local.core import messages
from reagent_local.core.channel import Channel, Message
from reagent_local.core.clock import LogicalClock
from reagent_local.core.knowledge import Statement, make_statement
from reagent_local.core.log import EventLog
from reagent_local.core.messages import MessageBody, body
from reagent_local.core.workspace import Workspace


@body("assert")
class CoreStep(MessageBody):
    """A test body: the step a statement answers."""

    step: int


@body("inform")
class CorePassages(MessageBody):
    """A test body: how many passages were found."""

    passages: int


@body("reject")
class CoreReject(MessageBody):
    """A test body: why statements are rejected, and what an escalation of them is."""

    reason: str
    kind: str = "reject"

    def why(self) -> str:
        return self.reason

    def escalation(self) -> str:
        return self.kind


def fact(subject: str, value: str, relation: str = "capital") -> Statement:
    return make_statement(subject=subject, relation=relation, value=value)


@pytest.fixture
def channel() -> Channel:
    return Channel(Workspace.start(EventLog(":memory:"), "q", {}))


def test_logical_clock() -> None:
    clock = LogicalClock(5)
    assert (clock.now, clock.tick(), clock.tick(), clock.now) == (5, 6, 7, 7)


@pytest.mark.parametrize("kwargs, message", [
    ({"type": "shout", "sender": "a", "recipients": ("b",)}, "unknown message type"),
    ({"type": "inform", "sender": "a", "recipients": ()}, "recipients"),
    ({"type": "inform", "sender": "a", "recipients": "b"}, "recipients"),
    ({"type": "assert", "sender": "a", "recipients": ("b",)}, "needs the statements"),
    ({"type": "inform", "sender": "a", "recipients": ("b",), "body": CoreStep(step=1)}, "travels as 'assert'"),
])
def test_message_validation(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Message(**kwargs)


def test_post_logs_and_stamps_but_applies_nothing_until_the_round(channel: Channel) -> None:
    ws = channel.workspace
    posted = channel.post(Message.of(CoreStep(step=1), "verifier", ("assembler",), (fact("A", "B"),)))
    event = ws.events()[-1]
    assert (posted.time, posted.seq) == (event.time, event.seq)
    assert event.type == "message" and event.agent == "verifier"
    assert event.payload["kind"] == "assert" and event.payload["recipients"] == ["assembler"]
    assert event.payload["statements"][0]["value"] == "B" and event.payload["payload"] == {"step": 1}
    assert event.payload["body"] == "CoreStep"
    assert messages.decode(event.payload["body"], event.payload["payload"]) == CoreStep(step=1) == posted.body
    assert ws.global_state() == () and channel.pending == (posted,)


def test_round_merges_duplicates_and_applies_with_message_as_parent(channel: Channel) -> None:
    ws = channel.workspace
    s = fact("A", "B")
    m1 = channel.post(Message("assert", "verifier", ("*",), (s,)))
    channel.post(Message("assert", "verifier", ("*",), (s, fact("C", "D"))))
    m3 = channel.post(Message("assert", "retriever", ("*",), (s,)))
    info = channel.post(Message.of(CorePassages(passages=3), "retriever", ("verifier",)))
    result = channel.deliver_round()
    assert result.round == 1 and result.escalations == () and channel.pending == ()
    assert [(x.agent, x.value) for x in result.applied] == [("verifier", "B"), ("verifier", "D"), ("retriever", "B")]
    asserts = [e for e in ws.events() if e.type == "assert"]
    assert [e.parent_seq for e in asserts] == [m1.seq, m1.seq + 1, m3.seq]
    assert result.inbox("verifier") == result.delivered and result.inbox("assembler") == result.delivered[:3]
    assert info in result.inbox("verifier")
    round_event = next(e for e in ws.events() if e.type == "round")
    assert round_event.payload["messages"] == [m.seq for m in result.delivered]
    assert round_event.payload["applied"] == [["verifier", s.id], ["verifier", fact("C", "D").id], ["retriever", s.id]]
    # asserting again what is already held is merged away in the next round
    channel.post(Message("assert", "verifier", ("*",), (s,)))
    assert channel.deliver_round().applied == ()


def test_concurrent_conflicting_asserts_are_escalated_not_applied(channel: Channel) -> None:
    ws = channel.workspace
    sac, la = fact("California", "Sacramento"), fact("California", "Los Angeles")
    pop = fact("Sacramento", "508,000", "population")
    m1 = channel.post(Message("assert", "thread1", ("assembler",), (sac, pop)))
    m2 = channel.post(Message("assert", "thread2", ("assembler",), (la,)))
    result = channel.deliver_round()
    # the statement that conflicts with nothing enters the sender's and the recipient's states
    assert [(s.agent, s.value) for s in result.applied] == [("thread1", "508,000"), ("assembler", "508,000")]
    assert ws.global_state() == result.applied
    (record,) = result.escalations
    assert [(s.agent, s.value) for s in record.statements] == [("thread1", "Sacramento"), ("thread2", "Los Angeles")]
    assert record.message_seqs == (m1.seq, m2.seq) and record.round == 1 and "one value" in record.reason
    assert record.bodies == (None, None)  # the messages that met carried no body
    assert (record.kind, record.source) == ("concurrent", "channel")
    escalate = ws.events()[-1]
    assert escalate.seq == record.seq and escalate.type == "escalate" and escalate.payload["to"] == "supervisor"
    round_event = next(e for e in ws.events() if e.type == "round")
    assert escalate.parent_seq == round_event.seq
    assert round_event.payload["escalated"] == [[["thread1", sac.id], ["thread2", la.id]]]


def test_an_assert_the_sender_already_holds_still_meets_its_rival(channel: Channel) -> None:
    """A verifier holds its answers before it publishes them: publishing still goes through the round's check."""
    ws = channel.workspace
    sac, la = fact("California", "Sacramento"), fact("California", "Los Angeles")
    held = ws.assert_statement("verifier", sac)
    channel.post(Message("assert", "verifier", ("assembler",), (held,)))
    channel.post(Message("assert", "verifier", ("assembler",), (ws.assert_statement("verifier", la),)))
    result = channel.deliver_round()
    assert result.applied == () and len(result.escalations) == 1
    assert ws.local_state("assembler") == ()


def test_a_reject_addressed_to_the_supervisor_is_an_escalation(channel: Channel) -> None:
    ws = channel.workspace
    a = ws.assert_statement("verifier", fact("A", "B"))
    b = ws.assert_statement("verifier", fact("C", "D", "population"))
    reject = channel.post(Message.of(CoreReject(reason="step 2 never mentions B", kind="bridge"), "assembler",
                                     ("supervisor",), (a, b)))
    result = channel.deliver_round()
    (record,) = result.escalations
    assert (record.kind, record.source, record.message_seqs) == ("bridge", "assembler", (reject.seq,))
    assert record.statements == (a, b) and record.reason == "step 2 never mentions B"
    assert record.bodies == (reject.body,)  # the supervisor reads what the reject carried
    assert result.retracted == () and ws.holders(a.id) == ["verifier"]  # nothing is taken out: the supervisor decides


def test_reject_retracts_from_recipients_only(channel: Channel) -> None:
    ws = channel.workspace
    s = fact("A", "B")
    ws.assert_statement("verifier", s)
    ws.assert_statement("assembler", s)
    reject = channel.post(Message.of(CoreReject(reason="stale evidence"), "controller", ("verifier",), (s,)))
    result = channel.deliver_round()
    assert [x.agent for x in result.retracted] == ["verifier"]
    assert ws.holders(s.id) == ["assembler"]
    retract = next(e for e in ws.events() if e.type == "retract")
    assert retract.parent_seq == reject.seq and retract.payload["reason"] == "stale evidence"


def test_every_message_is_an_event_with_increasing_time(channel: Channel) -> None:
    for kind in ("inform", "challenge"):
        channel.post(Message(kind, "controller", ("retriever", "verifier"), (fact("A", "B"),)))
    channel.deliver_round()
    events = channel.workspace.events()
    assert [e.payload["kind"] for e in events if e.type == "message"] == ["inform", "challenge"]
    assert [e.time for e in events] == list(range(1, len(events) + 1))
    assert channel.workspace.global_state() == ()  # inform and challenge change no state
