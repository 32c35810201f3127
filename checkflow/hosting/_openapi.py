"""The native API's OpenAPI 3.1 document, generated from msgspec types of its bodies.

The request types are the ones the routes decode; the response types here mirror the shapes
``_views`` renders (a test validates real answers against them, so the two cannot drift).
This module must never do I/O; it describes, it does not serve.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from checkflow.hosting._results import ResumeToken

__all__ = ["AgentRunRequest", "ChatMessageBody", "RunRequest", "openapi_document",
           "with_adapter_routes"]


class RunRequest(msgspec.Struct, forbid_unknown_fields=True):
    """The body of ``POST /v1/conversations/{id}/runs``: a message, or answers to requests."""

    message: Any = None
    responses: dict[str, Any] | None = None
    from_snapshot: str | None = None
    resume_token: ResumeToken | None = None


class ChatMessageBody(msgspec.Struct, forbid_unknown_fields=True):
    """A chat message in a body: a role (user, assistant, system, tool) and its text."""

    role: str
    content: str


class AgentRunRequest(msgspec.Struct, forbid_unknown_fields=True):
    """The body of an agent run: a text, or a list of texts and chat messages."""

    message: str | list[str | ChatMessageBody]


class AgentHistory(msgspec.Struct):
    """An agent conversation: its messages so far."""

    conversation_id: str
    messages: list[Any]


class PendingRequestView(msgspec.Struct):
    """A request the workflow waits on; answer it with ``responses[request_id]``."""

    request_id: str
    data: Any
    response_schema: dict[str, Any]
    source_executor_id: str


class TokenView(msgspec.Struct):
    """Names the head a run saw; send it back to refuse a stale turn (409)."""

    checkpoint_id: str
    snapshot_id: str


class ConversationView(msgspec.Struct):
    """A run's result, or a conversation at its head."""

    conversation_id: str
    status: str
    outputs: list[Any]
    pending_requests: list[PendingRequestView]
    resume_token: TokenView | None
    error: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    storage_head_snapshot_id: str | msgspec.UnsetType = msgspec.UNSET
    turn_id: str | msgspec.UnsetType = msgspec.UNSET
    """On a replayed run: the turn it repeats (what that turn's snapshots record)."""
    replayed: bool | msgspec.UnsetType = msgspec.UNSET
    """True when the run was a retry (same ``Idempotency-Key``) of a committed turn."""


class ConversationEntry(msgspec.Struct):
    """One conversation in the list: id, status and head."""

    conversation_id: str
    status: str | None
    head_snapshot_id: str
    updated_at: str


class ConversationPage(msgspec.Struct):
    """A page of the principal's conversations, newest first."""

    conversations: list[ConversationEntry]
    next_cursor: str | None


class SnapshotView(msgspec.Struct):
    """A snapshot list entry."""

    snapshot_id: str
    parent_snapshot_id: str | None
    timestamp: str
    metadata: dict[str, Any]
    is_head: bool


class SnapshotPage(msgspec.Struct):
    """A page of the conversation's snapshots, oldest first."""

    snapshots: list[SnapshotView]
    next_cursor: str | None


class SnapshotDetail(SnapshotView):
    """A snapshot with its state (decoded for display)."""

    state: dict[str, Any]


class CancelView(msgspec.Struct):
    """Whether a running turn was asked to stop."""

    conversation_id: str
    cancelled: bool


class AgentReply(msgspec.Struct):
    """An agent's reply: its text and the messages it added."""

    conversation_id: str
    text: str
    messages: list[Any]


class ErrorDetail(msgspec.Struct):
    code: str
    message: str


class ErrorBody(msgspec.Struct):
    """Every non-2xx answer: a stable ``code`` and a sentence (more fields by code)."""

    error: ErrorDetail


class Status(msgspec.Struct):
    status: str


_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
       "description": "the conversation id, percent-encoded (any string up to 512 characters)"}
_PAGE = [
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
    {"name": "cursor", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "next_cursor of the previous page"},
]


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _answer(name: str | None, what: str, *errors: int) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    if name is None:
        responses["204"] = {"description": what}
    else:
        responses["200"] = {"description": what,
                            "content": {"application/json": {"schema": _ref(name)}}}
    for status in errors:
        responses[str(status)] = {"description": "an error (see error.code)",
                                  "content": {"application/json": {"schema": _ref("ErrorBody")}}}
    return responses


def _operation(summary: str, response: str | None, *errors: int, body: str | None = None,
               params: list[dict[str, Any]] | None = None, stream: bool = False
               ) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "parameters": [_ID, *(params or [])],
                          "responses": _answer(response, summary, *errors)}
    if body is not None:
        op["requestBody"] = {"required": True,
                             "content": {"application/json": {"schema": _ref(body)}}}
    if stream:
        op["parameters"].append({"name": "stream", "in": "query", "required": False,
                                 "schema": {"type": "boolean"},
                                 "description": "answer with server-sent events"})
        op["responses"]["200"]["content"]["text/event-stream"] = {"schema": {"type": "string"}}
    return op


def openapi_document(kind: Literal["workflow", "agent"], title: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the native API a ``kind`` host serves."""
    types: list[Any] = [RunRequest, AgentRunRequest, ConversationView, ConversationPage,
                        SnapshotPage, SnapshotDetail, CancelView, AgentReply, AgentHistory,
                        ErrorBody, Status]
    (_, components) = msgspec.json.schema_components(
        types, ref_template="#/components/schemas/{name}")
    base = "/v1/conversations/{id}"
    run_body, run_answer = ("RunRequest", "ConversationView") if kind == "workflow" else (
        "AgentRunRequest", "AgentReply")
    paths: dict[str, Any] = {
        "/healthz": {"get": {"summary": "the process is up", "responses": {
            "200": {"description": "up",
                    "content": {"application/json": {"schema": _ref("Status")}}}}}},
        "/readyz": {"get": {"summary": "the storage can be read and written", "responses": {
            **_answer("Status", "ready", 503)}}},
        f"{base}/runs": {"post": _operation(
            "run one turn", run_answer, 400, 404, 409, 413, 415, 422, 500, 503,
            body=run_body, stream=True)},
        f"{base}/cancel": {"post": _operation("stop the running turn", "CancelView", 400)},
        base: {"get": _operation("the conversation at its head", "ConversationView", 404)
               if kind == "workflow" else _operation("the agent conversation's history",
                                                     "AgentHistory", 404),
               "delete": _operation("forget the conversation", None, 404, 409)},
        f"{base}/events": {"get": _operation(
            "re-attach to the running turn's events (server-sent events)", None, 400,
            params=[{"name": "after", "in": "query", "required": False,
                     "schema": {"type": "integer"}}])},
    }
    paths[f"{base}/events"]["get"]["responses"] = {
        "200": {"description": "events after `after`, then live ones",
                "content": {"text/event-stream": {"schema": {"type": "string"}}}}}
    if kind == "workflow":
        paths["/v1/conversations"] = {"get": {
            "summary": "the principal's conversations, newest first", "parameters": _PAGE,
            "responses": _answer("ConversationPage", "a page of conversations", 400)}}
        paths[f"{base}/snapshots"] = {"get": _operation(
            "the conversation's snapshots, oldest first", "SnapshotPage", 400, 404,
            params=_PAGE)}
        paths[f"{base}/snapshots/{{snapshot_id}}"] = {"get": _operation(
            "one snapshot with its state", "SnapshotDetail", 404,
            params=[{"name": "snapshot_id", "in": "path", "required": True,
                     "schema": {"type": "string"}}])}
    for operations in paths.values():
        for operation in operations.values():
            operation["tags"] = ["native"]
    return {
        "openapi": "3.1.0",
        "info": {"title": f"{title} (checkflow native API)", "version": "1"},
        "paths": paths,
        "components": {"schemas": components},
    }


def _route_operation(tag: str, path: str, endpoint: Any) -> dict[str, Any]:
    doc = inspect.getdoc(endpoint) or ""
    summary = doc.split("\n\n", 1)[0].replace("\n", " ") or f"{tag}: {path}"
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
              for name in re.findall(r"{(\w+)(?::\w+)?}", path)]
    return {"tags": [tag], "summary": summary, "parameters": params,
            "responses": {"default": {"description": f"as the {tag} protocol answers"}}}


def with_adapter_routes(document: dict[str, Any],
                        documented: Sequence[tuple[str, Sequence[Any]]]) -> dict[str, Any]:
    """``document`` plus every adapter route (``(adapter name, routes)``), tagged by name.

    The shapes of protocol bodies are their protocols' own (A2A, AG-UI, Responses): an
    operation names its path, method and the first paragraph of its endpoint's docstring."""
    paths = document["paths"]
    for tag, routes in documented:
        for route in routes:
            methods, path = getattr(route, "methods", None), getattr(route, "path", None)
            if not methods or not isinstance(path, str):
                continue
            shown = re.sub(r"{(\w+):\w+}", r"{\1}", path)
            for method in sorted(m.lower() for m in methods if m != "HEAD"):
                paths.setdefault(shown, {}).setdefault(
                    method, _route_operation(tag, shown, getattr(route, "endpoint", None)))
    return document
