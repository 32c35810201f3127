"""A2A parts and messages <-> the values a workflow takes and yields.

Incoming: a message becomes the host's ``message`` value (text -> ``str``, one data part ->
its JSON value, or the whole ``A2AMessage`` when the start executor declares that type).
Outgoing: each output becomes an artifact (``str`` -> text part, ``bytes`` -> file part,
``Artifact`` as given, anything else -> a data part of its JSON form). This module converts
only: it never calls the host and never touches the task store.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

from a2a.types import a2a_pb2
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError
from google.protobuf import json_format, struct_pb2

from checkflow.adapters.a2a._types import A2AMessage, A2APart, Artifact

__all__ = [
    "artifact_for_output",
    "input_value",
    "message_from_proto",
    "message_to_proto",
    "part_from_proto",
    "part_to_proto",
    "proto_value",
    "python_value",
    "takes_message",
]

_ROLES = {a2a_pb2.ROLE_USER: "user", a2a_pb2.ROLE_AGENT: "agent"}


def python_value(value: struct_pb2.Value | struct_pb2.Struct) -> Any:
    """A protobuf JSON value as Python; integral numbers come back as ``int``.

    ProtoJSON carries every number as a double, so ``{"n": 3}`` would otherwise reach the
    workflow as ``3.0`` and fail an ``int`` field.
    """
    return _integral(json_format.MessageToDict(value))


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    return value


def proto_value(value: Any) -> struct_pb2.Value:
    """A JSON-able Python value as a protobuf ``Value``."""
    return json_format.ParseDict(value, struct_pb2.Value())


def part_from_proto(part: a2a_pb2.Part) -> A2APart:
    """One wire part as an ``A2APart``."""
    metadata = python_value(part.metadata) if part.HasField("metadata") else {}
    kind = part.WhichOneof("content")
    if kind == "text":
        return A2APart(kind="text", text=part.text, metadata=metadata)
    if kind == "data":
        return A2APart(kind="data", data=python_value(part.data), metadata=metadata)
    if kind in ("raw", "url"):
        return A2APart(kind="file", raw=part.raw if kind == "raw" else None,
                       url=part.url if kind == "url" else None,
                       filename=part.filename or None, media_type=part.media_type or None,
                       metadata=metadata)
    raise InvalidParamsError(message="a message part has no content (text, data, raw or url)")


def part_to_proto(part: A2APart) -> a2a_pb2.Part:
    """An ``A2APart`` as a wire part."""
    out = a2a_pb2.Part()
    if part.kind == "text":
        out.text = part.text or ""
    elif part.kind == "data":
        out.data.CopyFrom(proto_value(part.data))
    elif part.raw is not None:
        out.raw = part.raw
    else:
        out.url = part.url or ""
    if part.filename:
        out.filename = part.filename
    if part.media_type:
        out.media_type = part.media_type
    if part.metadata:
        out.metadata.update(part.metadata)
    return out


def message_from_proto(message: a2a_pb2.Message) -> A2AMessage:
    """A wire message as the ``A2AMessage`` a workflow receives."""
    return A2AMessage(
        parts=[part_from_proto(p) for p in message.parts],
        role=_ROLES.get(message.role, "user"),  # type: ignore[arg-type]
        message_id=message.message_id or None,
        context_id=message.context_id or None,
        task_id=message.task_id or None,
        metadata=python_value(message.metadata) if message.HasField("metadata") else {},
    )


def message_to_proto(message: A2AMessage, *, message_id: str, context_id: str,
                     task_id: str | None = None) -> a2a_pb2.Message:
    """An ``A2AMessage`` a workflow yielded as a wire message from the agent."""
    out = a2a_pb2.Message(
        message_id=message.message_id or message_id,
        context_id=context_id,
        role=a2a_pb2.ROLE_USER if message.role == "user" else a2a_pb2.ROLE_AGENT,
        parts=[part_to_proto(p) for p in message.parts],
    )
    if task_id:
        out.task_id = task_id
    if message.metadata:
        out.metadata.update(message.metadata)
    return out


def takes_message(response_type: Any) -> bool:
    """Whether a value of ``response_type`` may be an ``A2AMessage`` (the type itself, or a
    union holding it): such a request is answered with the whole continuation message."""
    if response_type is A2AMessage:
        return True
    if typing.get_origin(response_type) in (typing.Union, types.UnionType):
        return A2AMessage in typing.get_args(response_type)
    return False


def input_value(message: a2a_pb2.Message, *, whole_message: bool) -> Any:
    """The host ``message`` for an incoming A2A message.

    ``whole_message``: the start executor declares ``A2AMessage``, so it gets everything.
    Otherwise text parts are joined into one ``str`` and a single data part gives its JSON
    value; file parts, or data mixed with more parts, are refused naming what was sent.
    """
    received = message_from_proto(message)
    if whole_message:
        return received
    kinds = [p.kind for p in received.parts]
    if not kinds:
        raise InvalidParamsError(message="the message has no parts")
    if "file" in kinds:
        raise ContentTypeNotSupportedError(
            message="this agent takes text or data parts; a file part needs a start executor "
                    "that accepts checkflow.adapters.a2a.A2AMessage")
    if all(kind == "text" for kind in kinds):
        return received.text()
    if kinds == ["data"]:
        return received.parts[0].data
    raise InvalidParamsError(
        message=f"send text parts or exactly one data part (got parts: {', '.join(kinds)})")


def _parts_for_value(value: Any, to_json: Callable[[Any], Any]) -> list[a2a_pb2.Part]:
    if isinstance(value, A2APart):
        return [part_to_proto(value)]
    if isinstance(value, str):
        return [a2a_pb2.Part(text=value)]
    if isinstance(value, bytes | bytearray):
        return [a2a_pb2.Part(raw=bytes(value), media_type="application/octet-stream")]
    if isinstance(value, A2AMessage):
        return [part_to_proto(p) for p in value.parts]
    return [a2a_pb2.Part(data=proto_value(to_json(value)))]


def artifact_for_output(value: Any, *, default_id: str, id_prefix: str,
                        to_json: Callable[[Any], Any]) -> tuple[a2a_pb2.Artifact, bool, bool]:
    """The artifact (and its ``append`` / ``last_chunk`` flags) for one workflow output.

    ``default_id`` names artifacts the workflow did not name; an ``Artifact``'s own id (or
    name) is prefixed with ``id_prefix`` so two runs of one task never collide.
    """
    if isinstance(value, Artifact):
        own = value.artifact_id or value.name
        artifact = a2a_pb2.Artifact(
            artifact_id=f"{id_prefix}{own}" if own else default_id,
            parts=[part_to_proto(p) for p in value.parts],
        )
        if value.name:
            artifact.name = value.name
        if value.description:
            artifact.description = value.description
        if value.metadata:
            artifact.metadata.update(value.metadata)
        return artifact, value.append, value.last_chunk
    artifact = a2a_pb2.Artifact(artifact_id=default_id, parts=_parts_for_value(value, to_json))
    return artifact, False, True
