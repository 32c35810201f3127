"""What the A2A end-to-end tests send with the official a2a-sdk client: one message, one task."""

from __future__ import annotations

import uuid
from typing import Any

from a2a.client import Client
from a2a.types import a2a_pb2
from google.protobuf import json_format


def message(value: Any, *, task_id: str | None = None) -> a2a_pb2.SendMessageRequest:
    """A user message of one part: a text part for a str, else a data part."""
    part = a2a_pb2.Part(text=value) if isinstance(value, str) else a2a_pb2.Part(
        data=json_format.ParseDict(value, a2a_pb2.Part().data))
    out = a2a_pb2.Message(message_id=uuid.uuid4().hex, role=a2a_pb2.ROLE_USER, parts=[part])
    if task_id:
        out.task_id = task_id
    return a2a_pb2.SendMessageRequest(message=out)


async def one_task(client: Client, request: a2a_pb2.SendMessageRequest) -> a2a_pb2.Task:
    """Send ``request`` and return the one task it answers with."""
    (response,) = [r async for r in client.send_message(request)]
    assert response.HasField("task"), response
    return response.task
