"""The values a workflow exchanges with the A2A adapter: messages, parts, artifacts, rejection.

They are registered state types (they travel in checkpoints as inputs and outputs) and carry
plain Python values only; this module must never import the a2a SDK, so a workflow can declare
them without the ``a2a`` extra installed.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from checkflow.errors import CheckflowError
from checkflow.state import register_state_type

__all__ = ["A2AMessage", "A2APart", "Artifact", "TaskRejected"]


class A2APart(msgspec.Struct, frozen=True, kw_only=True):
    """One part of an A2A message or artifact: exactly one of text, data, raw bytes or a URL.

    ``kind`` says which: ``"text"``, ``"data"`` (any JSON value), or ``"file"`` (``raw`` bytes
    or a ``url``, with ``filename`` and ``media_type`` when known). ``metadata`` is the part's
    own metadata, a JSON object.
    """

    kind: Literal["text", "data", "file"]
    text: str | None = None
    data: Any = None
    raw: bytes | None = None
    url: str | None = None
    filename: str | None = None
    media_type: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind == "text" and self.text is None:
            raise ValueError("a text part needs text")
        if self.kind == "file" and (self.raw is None) == (self.url is None):
            raise ValueError("a file part needs exactly one of raw bytes or a url")

    @classmethod
    def of_text(cls, text: str, **metadata: Any) -> A2APart:
        """A text part."""
        return cls(kind="text", text=text, metadata=dict(metadata))

    @classmethod
    def of_data(cls, data: Any, **metadata: Any) -> A2APart:
        """A data part holding a JSON value."""
        return cls(kind="data", data=data, metadata=dict(metadata))

    @classmethod
    def of_file(cls, raw: bytes | None = None, *, url: str | None = None,
                filename: str | None = None, media_type: str | None = None) -> A2APart:
        """A file part, by bytes or by URL."""
        return cls(kind="file", raw=raw, url=url, filename=filename, media_type=media_type)


class A2AMessage(msgspec.Struct, frozen=True, kw_only=True):
    """An A2A message as a workflow sees it.

    A start executor whose input type is ``A2AMessage`` receives the incoming message whole
    (ids, role, every part with its metadata), and so does a request asked with
    ``response_type=A2AMessage`` from the continuation that answers it. A run that yields an
    ``A2AMessage`` and completes in its first call is answered with that message directly,
    not with a task; a task whose completing turn yields one last has it as its
    ``COMPLETED`` status message.
    """

    parts: list[A2APart]
    role: Literal["user", "agent"] = "agent"
    message_id: str | None = None
    context_id: str | None = None
    task_id: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    def text(self, delimiter: str = "\n") -> str:
        """The message's text parts joined, for handlers that want only the words."""
        return delimiter.join(p.text for p in self.parts if p.kind == "text" and p.text)


class Artifact(msgspec.Struct, frozen=True, kw_only=True):
    """An output sent as one A2A artifact (or one chunk of it) exactly as given.

    Chunks of one artifact share ``artifact_id`` (default: the ``name``): the first has
    ``append=False``, the following ones ``append=True``, the last one ``last_chunk=True``.
    """

    parts: list[A2APart]
    name: str | None = None
    artifact_id: str | None = None
    description: str | None = None
    append: bool = False
    last_chunk: bool = False
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class TaskRejected(CheckflowError):
    """Raised by an executor to end its A2A task ``TASK_STATE_REJECTED`` with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


register_state_type(A2APart, type_id="checkflow.a2a.Part")
register_state_type(A2AMessage, type_id="checkflow.a2a.Message")
register_state_type(Artifact, type_id="checkflow.a2a.Artifact")
