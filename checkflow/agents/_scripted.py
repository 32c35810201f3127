"""``ScriptedAgent``: a deterministic agent that replays a fixed script, for samples and tests.

The reply for a run is picked by the session's own history (how many assistant turns it holds),
never by a counter on the agent, so two sessions each get the whole script and a restored
session gets the same reply again. This module must never call a model service.
"""

from __future__ import annotations

from collections.abc import Sequence

from checkflow.agents._base import BaseAgent, append_history, get_history
from checkflow.agents._messages import (
    ChatMessage,
    FunctionResultContent,
    UserInputRequestContent,
)
from checkflow.agents._types import AgentResponse
from checkflow.errors import AgentError
from checkflow.sessions import AgentSession

__all__ = ["ScriptedAgent"]


class ScriptedAgent(BaseAgent):
    """Answers turn N of a conversation with ``replies[N]``.

    A reply is a str (an assistant text) or a ``UserInputRequestContent`` (the agent pauses;
    the next run must carry a ``FunctionResultContent`` whose ``call_id`` is its
    ``request_id``, else ``AgentError``). Running past the end of the script is an
    ``AgentError`` too.
    """

    def __init__(self, name: str, replies: Sequence[str | UserInputRequestContent]) -> None:
        super().__init__(name)
        for reply in replies:
            if not isinstance(reply, str | UserInputRequestContent):
                raise TypeError(
                    f"a scripted reply is a str or a UserInputRequestContent, "
                    f"not {type(reply).__name__}"
                )
        self._replies = tuple(replies)

    @property
    def replies(self) -> tuple[str | UserInputRequestContent, ...]:
        """The script, in order."""
        return self._replies

    async def _respond(self, messages: list[ChatMessage], session: AgentSession) -> AgentResponse:
        history = get_history(session)
        self._check_answers(history, messages)
        turn = sum(1 for m in history if m.role == "assistant")
        if turn >= len(self._replies):
            raise AgentError(
                f"scripted agent {self.name!r} has no reply left: its script has "
                f"{len(self._replies)} replies and session {session.session_id!r} already "
                f"had {turn} assistant turns"
            )
        reply = ChatMessage("assistant", self._replies[turn])
        append_history(session, [*messages, reply])
        return AgentResponse(messages=[reply], author_name=self.name)

    def _check_answers(self, history: list[ChatMessage], messages: list[ChatMessage]) -> None:
        """Every pending request must be answered, and every answer must match a request."""
        last = history[-1] if history else None
        pending = (
            {c.request_id for c in last.contents if isinstance(c, UserInputRequestContent)}
            if last is not None and last.role == "assistant"
            else set()
        )
        answered = {
            c.call_id for m in messages for c in m.contents if isinstance(c, FunctionResultContent)
        }
        if missing := sorted(pending - answered):
            raise AgentError(
                f"scripted agent {self.name!r} is waiting for an answer to request "
                f"{missing[0]!r}: send a FunctionResultContent(call_id={missing[0]!r}, ...)"
            )
        if unknown := sorted(answered - pending):
            raise AgentError(
                f"scripted agent {self.name!r} got a FunctionResultContent for "
                f"{unknown[0]!r}, which it did not ask for"
            )
