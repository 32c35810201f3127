"""The agent card: name, description and a skill from the workflow, interfaces from the URL.

A card given by the user (an ``AgentCard`` or a path to its JSON) replaces what the workflow
says; its interfaces, when it declares none, and always the capabilities we implement
(streaming yes, push notifications when the adapter offers them) are ours. The interface
URLs are the server's public base URL plus the JSON-RPC path and the REST prefix. This
module builds cards only: it never serves them.
"""

from __future__ import annotations

import re
from pathlib import Path

from a2a.types import a2a_pb2
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from google.protobuf import json_format

__all__ = ["base_card", "load_card", "with_interfaces"]

_MODES = ["text/plain", "application/json"]


def load_card(source: a2a_pb2.AgentCard | str | Path) -> a2a_pb2.AgentCard:
    """A card object as given, or parsed from a JSON file (the card's ProtoJSON form)."""
    if isinstance(source, a2a_pb2.AgentCard):
        card = a2a_pb2.AgentCard()
        card.CopyFrom(source)
        return card
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the agent card {str(path)!r}: {exc}") from exc
    card = a2a_pb2.AgentCard()
    try:
        json_format.Parse(text, card)
    except json_format.ParseError as exc:
        raise ValueError(f"the agent card {str(path)!r} is not a valid card: {exc}") from exc
    return card


def _skill_id(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "workflow"


def base_card(name: str, description: str) -> a2a_pb2.AgentCard:
    """The card a workflow (or agent) describes: one skill, text and JSON in and out."""
    name = name or "checkflow agent"
    text = description or f"The {name} workflow, served by checkflow."
    return a2a_pb2.AgentCard(
        name=name, description=text, version="1.0.0",
        default_input_modes=_MODES, default_output_modes=_MODES,
        skills=[a2a_pb2.AgentSkill(id=_skill_id(name), name=name, description=text,
                                   tags=["checkflow"], input_modes=_MODES,
                                   output_modes=_MODES)])


def with_interfaces(card: a2a_pb2.AgentCard, base_url: str, *, rpc_path: str,
                    rest_prefix: str, push_notifications: bool = False) -> a2a_pb2.AgentCard:
    """A copy of ``card`` with our capabilities and, unless it has its own, our interfaces."""
    out = a2a_pb2.AgentCard()
    out.CopyFrom(card)
    out.capabilities.streaming = True
    out.capabilities.push_notifications = push_notifications
    if not out.supported_interfaces:
        base = base_url.rstrip("/")
        out.supported_interfaces.extend([
            a2a_pb2.AgentInterface(url=f"{base}{rpc_path}",
                                   protocol_binding=TransportProtocol.JSONRPC,
                                   protocol_version=PROTOCOL_VERSION_CURRENT),
            a2a_pb2.AgentInterface(url=f"{base}{rest_prefix}",
                                   protocol_binding=TransportProtocol.HTTP_JSON,
                                   protocol_version=PROTOCOL_VERSION_CURRENT)])
    return out
