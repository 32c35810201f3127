"""The ``openai`` client against a served Responses app, every body and event checked against
the three models (``foundry_schema``): what the Foundry end-to-end tests share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from tests.adapters.foundry.foundry_schema import (
    validate_error,
    validate_event,
    validate_response,
)


def client(server: Any, api_key: str = "not-used", **headers: str) -> OpenAI:
    """An ``openai`` client of ``server`` that never retries on its own."""
    return OpenAI(base_url=server.url, api_key=api_key, max_retries=0, timeout=60,
                  default_headers=headers or None)


def checked(raw: Any) -> dict[str, Any]:
    """The body of a raw response, validated and parsed by the client too."""
    body = raw.http_response.json()
    validate_response(body)
    raw.parse()
    return body


def create(openai_client: OpenAI, **params: Any) -> dict[str, Any]:
    return checked(openai_client.responses.with_raw_response.create(**params))


def retrieve(openai_client: OpenAI, response_id: str) -> dict[str, Any]:
    return checked(openai_client.responses.with_raw_response.retrieve(response_id))


def text(body: dict[str, Any]) -> str:
    """The text of a Response's assistant messages, joined."""
    return "".join(part["text"] for item in body["output"] if item["type"] == "message"
                   for part in item["content"])


def events(stream: Any) -> list[dict[str, Any]]:
    """A stream's events as sent, each validated."""
    found = []
    for event in stream:
        wire = event.to_dict(warnings=False)
        validate_event(wire)
        found.append(wire)
    return found


def refused(call: Callable[[], Any], status: int) -> dict[str, Any]:
    """The OpenAI-shaped ``error`` of a call that must fail with ``status``."""
    with pytest.raises(openai.APIStatusError) as caught:
        call()
    assert caught.value.status_code == status, caught.value.response.text
    body = caught.value.response.json()
    validate_error(body)
    return dict(body["error"])


def native(server: Any, path: str, **headers: str) -> Any:
    """A native API read under ``/v1/conversations/``."""
    response = httpx.get(f"{server.url}/v1/conversations/{path}", headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes: what a refused request must leave alone."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}
