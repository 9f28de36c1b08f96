"""`reagent chat`: a conversation in the terminal; follow-ups are read with the turns before them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .common import info

if TYPE_CHECKING:
    from ..agents.rewriter import Turn
    from ..config import Config

HELP_LINE = "Type a question; a follow-up may point back (\"and where was she born?\"). /new starts over, /exit ends."


@click.command(name="chat")
@click.option("--index", help="Index name or path, or several separated by commas (default: config retrieval.index).")
@click.option("--model", help="Registry model name or path to a .gguf file.")
@click.option("--resume", "resume", default=None, metavar="ID",
              help="Go on with a conversation of the log (its id, as `reagent chat` prints it).")
@click.option("--local", is_flag=True,
              help="Load the model in this process even when a `reagent serve` of this home could answer.")
def chat(index: str | None, model: str | None, resume: str | None, local: bool) -> None:
    """Ask questions one after another; each answer is printed as `reagent ask` prints it.

    A follow-up is first rewritten by the decomposer into a question that stands alone, from the
    earlier turns' questions, answers and cited titles ("Read as: ..."). Every turn is a run in
    the log whose first event is that rewrite, with the conversation's id: `reagent trace show`
    shows it, and `reagent chat --resume ID` goes on with the conversation.
    """
    from ..api import ReAgent
    from ..reasoning.conversation import new_conversation_id, turn_of
    from .ask import _tell, print_answer
    from .common import config_from

    config = config_from(retrieval__index=index, llm__model=model, llm__use_server=False if local else None)
    turns = _resumed(config, resume) if resume else []
    conversation = resume or new_conversation_id()
    with ReAgent.load(config=config, on_event=_tell) as agent:
        if agent.route.note():
            info(agent.route.note())
        info(f"conversation {conversation} over index {config.retrieval.index}" +
             (f", {len(turns)} earlier turns" if turns else "") + ". " + HELP_LINE)
        while True:
            try:
                question = input(f"[{len(turns) + 1}]> ").strip()
            except EOFError:
                click.echo()
                break
            if not question:
                continue
            if question in ("/exit", "/quit"):
                break
            if question == "/new":
                turns, conversation = [], new_conversation_id()
                info(f"conversation {conversation}: the next question is read alone")
                continue
            try:
                answer = agent.ask(question, history=turns, conversation=conversation)
            except KeyboardInterrupt:
                info("stopped; ask again, or /exit")
                continue
            print_answer(answer)
            turns.append(turn_of(answer, question))
    info(f"conversation {conversation}: `reagent chat --resume {conversation}` goes on with it")


def _resumed(config: "Config", conversation: str) -> "list[Turn]":
    """The turns of a conversation found in the log (a clear error when it has none)."""
    from ..reasoning.conversation import conversation_turns
    from ..core.log import EventLog
    from ..errors import RunNotFoundError

    with EventLog(config.paths.log, read_only=True) as log:
        found = conversation_turns(log, conversation)
    if not found:
        raise RunNotFoundError(f"no finished turn of conversation {conversation!r} in the log",
                               hint="`reagent chat` prints a conversation's id when it starts and ends")
    return [turn for _, turn in found]
