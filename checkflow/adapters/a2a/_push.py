"""A2A push-notification configs: the webhook policy, and the SDK's config store on records.

A push config is the client's setting for a task (where to POST it, with which token and
credentials), not part of the task, so it is not in the checkpoint: it is kept durably per
principal and conversation as one record of the host's own store (``host.records``; memory,
file or Cosmos alike), beside each config the *delivery cursor*: which state of the task was
last delivered to it. What is pending is derived (``_deliver``): the task as the checkpoint
renders it now, against that cursor. A config starts at the task's state when it was
registered, so only later changes are pushed.

A webhook is a request the server makes on the client's behalf, from inside the server's own
network (SSRF): its URL must be http(s), and a host that is (or resolves to) a loopback,
link-local, private or otherwise non-public address is refused unless the operator allows it
(``allow_local``) or names it (``allowed_hosts``). This module never sends anything.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore
from a2a.server.tasks.push_notification_config_store import (
    normalize_push_notification_config,
)
from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from google.protobuf import json_format

from checkflow.adapters.a2a._ids import TERMINAL, parse_task_id, principal_of
from checkflow.adapters.a2a._metadata import error_data
from checkflow.adapters.a2a._view import TaskView, load_task
from checkflow.errors import SessionConflictError
from checkflow.hosting import Host, RecordStore

__all__ = ["MAX_CONFIGS_PER_TASK", "PUSH_NAMESPACE", "PushConfigStore", "PushPolicy",
           "PushURLError", "config_of", "cursor_of", "invalid_push_url", "is_final"]

PUSH_NAMESPACE = "a2a-push"
"""The records namespace: one record per (principal, conversation)."""
MAX_CONFIGS_PER_TASK = 16
"""More configs for one task are refused (-32602): each is a POST per state change."""

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class PushURLError(ValueError):
    """A webhook URL the policy refuses; ``reason`` says what was wrong with ``url``."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"push notification URL {url[:200]!r} refused: {reason}")
        self.url = url
        self.reason = reason


def invalid_push_url(exc: PushURLError) -> InvalidParamsError:
    """The A2A error (-32602, REST 400) for a refused webhook URL."""
    return InvalidParamsError(message=str(exc),
                              data=error_data(reason="invalid_push_url", url=exc.url[:200]))


def _networks(entries: Sequence[str]) -> tuple[tuple[IPNetwork, ...], frozenset[str]]:
    networks: list[IPNetwork] = []
    names: set[str] = set()
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
        except ValueError:
            names.add(entry.lower().rstrip("."))
    return tuple(networks), frozenset(names)


def _mapped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _local_kind(address: IPAddress) -> str | None:
    """Why ``address`` is not public (``None``: it is)."""
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata lives there)"
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        return "not a unicast address"
    if address.is_private or not address.is_global:
        return "a private or non-public address"
    return None


Resolve = Callable[[str, int], Any]


@dataclass(frozen=True, slots=True)
class PushPolicy:
    """Which webhook URLs the adapter POSTs to.

    ``allowed_hosts``: when given, only these hosts (names, compared case-insensitively) and
    networks (``"10.1.0.0/16"``, ``"127.0.0.1"``) are accepted, and they are trusted even when
    they are not public. ``allow_local``: accept loopback, link-local and private addresses
    (for development and tests). A name is resolved and judged by every address it has.
    """

    allowed_hosts: Sequence[str] | None = None
    allow_local: bool = False

    async def check(self, url: str) -> None:
        """Refuse ``url`` with ``PushURLError`` unless the policy accepts it."""
        try:
            parsed = urllib.parse.urlsplit(url)
            port = parsed.port
        except ValueError as exc:
            raise PushURLError(url, f"it is not a valid URL ({exc})") from None
        if parsed.scheme not in ("http", "https"):
            raise PushURLError(url, f"the scheme must be http or https, not "
                                    f"{parsed.scheme or 'none'!r}")
        host = (parsed.hostname or "").rstrip(".")
        if not host:
            raise PushURLError(url, "it has no host")
        if parsed.username is not None or parsed.password is not None:
            raise PushURLError(url, "credentials belong in 'authentication', not the URL")
        networks, names = _networks(self.allowed_hosts or ())
        if self.allowed_hosts is not None and host.lower() in names:
            return  # named by the operator
        addresses = await _addresses(host, port or (443 if parsed.scheme == "https" else 80),
                                     url)
        if self.allowed_hosts is not None:
            if all(any(a in n for n in networks if a.version == n.version)
                   for a in addresses):
                return
            raise PushURLError(url, f"host {host!r} is not in the adapter's allowed hosts")
        if self.allow_local:
            return
        for address in addresses:
            kind = _local_kind(address)
            if kind is not None:
                raise PushURLError(url, f"host {host!r} is {kind} ({address}); the server "
                                        f"does not call into its own network unless allowed "
                                        f"(A2AAdapter push_allow_local or push_allowed_hosts)")


async def _addresses(host: str, port: int, url: str) -> list[IPAddress]:
    try:
        return [_mapped(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port,
                                                             type=socket.SOCK_STREAM)
    except OSError as exc:
        raise PushURLError(url, f"host {host!r} cannot be resolved ({exc})") from None
    found = [_mapped(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]))
             for info in infos]
    if not found:  # pragma: no cover - getaddrinfo raises instead
        raise PushURLError(url, f"host {host!r} has no address")
    return found


def cursor_of(view: TaskView) -> str:
    """What one delivery of the task says: its A2A state as of its last turn (not how that
    turn is recorded: a turn whose pause is committed reads the same while it closes)."""
    return f"{a2a_pb2.TaskState.Name(view.state)}|{view.last.turn_id}"


def is_final(cursor: object) -> bool:
    """Whether a delivered cursor is a terminal state (nothing can follow it)."""
    return isinstance(cursor, str) and a2a_pb2.TaskState.Value(
        cursor.split("|", 1)[0]) in TERMINAL


Changed = Callable[[str | None, str], None]


class PushConfigStore(PushNotificationConfigStore):
    """The SDK's push-config store on records: ``{"tasks": {task_id: {config_id:
    {"config": <ProtoJSON>, "delivered": <cursor or None>}}}}`` per principal and context.

    ``changed(principal, context_id)`` is called after every write (the deliverer watches
    that conversation)."""

    def __init__(self, host: Host, changed: Changed) -> None:
        self._host = host
        self.records: RecordStore = host.records(PUSH_NAMESPACE)
        self._changed = changed

    async def update(self, principal: str | None, context_id: str,
                     edit: Callable[[dict[str, Any]], bool], *, notify: bool = True) -> None:
        """Apply ``edit`` to the conversation's record (it says whether it changed it),
        retrying on a concurrent write; an emptied record is deleted. ``notify``: tell
        ``changed`` (a config was written, not a cursor)."""
        conflict: SessionConflictError | None = None
        for _ in range(20):
            stored = await self.records.get(context_id, principal=principal)
            value: dict[str, Any] = (dict(stored.value) if stored is not None
                                     and isinstance(stored.value, dict) else {})
            tasks = value.get("tasks")
            value["tasks"] = {t: {c: dict(e) for c, e in configs.items()}
                              for t, configs in (tasks or {}).items()}
            if not edit(value["tasks"]):
                return
            value["tasks"] = {t: c for t, c in value["tasks"].items() if c}
            try:
                if not value["tasks"]:
                    if stored is not None:
                        await self.records.delete(context_id, principal=principal,
                                                  expected_version=stored.version)
                else:
                    await self.records.put(
                        context_id, value, principal=principal,
                        expected_version=None if stored is None else stored.version,
                        create=stored is None)
            except SessionConflictError as exc:
                conflict = exc
                continue
            if notify:
                self._changed(principal, context_id)
            return
        assert conflict is not None
        raise conflict

    async def read(self, principal: str | None, context_id: str
                   ) -> dict[str, dict[str, dict[str, Any]]]:
        """The conversation's configs by task and config id (empty if none)."""
        stored = await self.records.get(context_id, principal=principal)
        value = stored.value if stored is not None else None
        tasks = value.get("tasks") if isinstance(value, dict) else None
        return tasks if isinstance(tasks, dict) else {}

    async def set_info(self, task_id: str, notification_config: a2a_pb2.TaskPushNotificationConfig,
                       context: ServerCallContext) -> a2a_pb2.TaskPushNotificationConfig:
        """Register (or replace, by id) a config of the caller's task."""
        parsed = parse_task_id(task_id)
        if parsed is None:
            raise TaskNotFoundError(message=f"task {task_id!r} not found")
        principal = principal_of(context)
        stored = normalize_push_notification_config(task_id, notification_config)
        stored.tenant = ""
        view = await load_task(self._host, task_id, principal)
        entry = {"config": json_format.MessageToDict(stored),
                 "delivered": cursor_of(view) if view is not None else None}

        def edit(tasks: dict[str, Any]) -> bool:
            configs = tasks.setdefault(task_id, {})
            if stored.id not in configs and len(configs) >= MAX_CONFIGS_PER_TASK:
                raise InvalidParamsError(
                    message=f"task {task_id} already has {MAX_CONFIGS_PER_TASK} push "
                            f"notification configs: delete one first")
            configs[stored.id] = entry
            return True

        await self.update(principal, parsed[0], edit)
        return stored

    async def get_info(self, task_id: str, context: ServerCallContext
                       ) -> list[a2a_pb2.TaskPushNotificationConfig]:
        """The caller's configs of the task, in the order they were first set."""
        parsed = parse_task_id(task_id)
        if parsed is None:
            return []
        tasks = await self.read(principal_of(context), parsed[0])
        return [config_of(e) for e in (tasks.get(task_id) or {}).values()]

    async def get_info_for_dispatch(self, task_id: str
                                    ) -> list[a2a_pb2.TaskPushNotificationConfig]:
        """Unused: deliveries are derived per principal (``_deliver``), not the SDK's."""
        del task_id
        return []

    async def delete_info(self, task_id: str, context: ServerCallContext,
                          config_id: str | None = None) -> None:
        """Delete one config of the caller's task (every one without ``config_id``)."""
        parsed = parse_task_id(task_id)
        if parsed is None:
            return

        def edit(tasks: dict[str, Any]) -> bool:
            configs = tasks.get(task_id)
            if not configs:
                return False
            if config_id is None:
                del tasks[task_id]
            elif configs.pop(config_id, None) is None:
                return False
            return True

        await self.update(principal_of(context), parsed[0], edit)


def config_of(entry: dict[str, Any]) -> a2a_pb2.TaskPushNotificationConfig:
    """The config a record entry holds."""
    config = a2a_pb2.TaskPushNotificationConfig()
    json_format.ParseDict(entry.get("config") or {}, config, ignore_unknown_fields=True)
    return config
