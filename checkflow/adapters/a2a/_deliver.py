"""Push deliveries, derived outbox-style: what is pending is computed, never queued.

For every push config (``_push``) the record holds the cursor of the last delivery; a
delivery is pending while the task as the checkpoint renders it now (``_view``) says
something else. The deliverer checks a conversation on start-up (every record is scanned),
after each turn this process relayed, after a config is written, and every
``PushRetry.rescan_seconds`` (a change made elsewhere: a native answer, another process); it
POSTs the task as it is then, retrying with exponential backoff (no jitter), and records the
cursor only after the webhook answered 2xx. So a restart between a state change and its
delivery still delivers it, and nothing is written when the task changes. Delivery is at
least once: a crash after the POST and before the cursor write sends that state again, and
a state the task passed through while a delivery was failing is skipped (the task as it is
now is sent). This module never decides which URLs are safe (``PushPolicy`` does).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.types import a2a_pb2
from a2a.utils.proto_utils import to_stream_response
from google.protobuf import json_format

from checkflow.adapters.a2a._ids import parse_task_id
from checkflow.adapters.a2a._push import (
    PushConfigStore,
    PushPolicy,
    PushURLError,
    config_of,
    cursor_of,
    is_final,
)
from checkflow.adapters.a2a._view import TaskView, load_task
from checkflow.hosting import Host

__all__ = ["TOKEN_HEADER", "PushDeliverer", "PushRetry"]

TOKEN_HEADER = "X-A2A-Notification-Token"
"""The header the config's ``token`` travels in (as the SDK's own sender names it)."""

_log = logging.getLogger("checkflow.a2a.push")

Key = tuple[str | None, str]  # (principal, context id)


@dataclass(frozen=True, slots=True)
class PushRetry:
    """How deliveries are retried: ``attempts`` POSTs per round, ``first_delay`` seconds
    before the second, doubling (``factor``) up to ``max_delay``; each POST may take
    ``timeout`` seconds. A round that fails leaves the delivery pending for the next check
    (at the latest ``rescan_seconds`` later, or at the next start-up)."""

    attempts: int = 5
    first_delay: float = 1.0
    factor: float = 2.0
    max_delay: float = 60.0
    timeout: float = 10.0
    rescan_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"PushRetry.attempts must be at least 1 (got {self.attempts})")
        if min(self.first_delay, self.max_delay, self.timeout) < 0 or self.factor < 1:
            raise ValueError("PushRetry delays and timeout must be >= 0 and factor >= 1")
        if self.rescan_seconds <= 0:
            raise ValueError("PushRetry.rescan_seconds must be greater than 0")

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed POST of a round (from 1)."""
        return float(min(self.max_delay, self.first_delay * self.factor ** (failures - 1)))


def notification(task: a2a_pb2.Task) -> dict[str, Any]:
    """The POST body: the task as a ``StreamResponse`` (as the SDK's sender sends it)."""
    body: dict[str, Any] = json_format.MessageToDict(to_stream_response(task))
    return body


def _headers(config: a2a_pb2.TaskPushNotificationConfig) -> dict[str, str]:
    headers = {}
    if config.token:
        headers[TOKEN_HEADER] = config.token
    auth = config.authentication
    if config.HasField("authentication") and auth.scheme and auth.credentials:
        headers["Authorization"] = f"{auth.scheme} {auth.credentials}"
    return headers


class PushDeliverer:
    """Checks watched conversations and delivers what is pending (one worker each)."""

    def __init__(self, host: Host, policy: PushPolicy, retry: PushRetry, *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._host = host
        self.policy = policy
        self._retry = retry
        self._sleep = sleep
        self.store = PushConfigStore(host, self.watch)
        self._watched: set[Key] = set()
        self._workers: dict[Key, asyncio.Task[None]] = {}
        self._again: set[Key] = set()
        self._rescan: asyncio.Task[None] | None = None
        self._client: httpx.AsyncClient | None = None

    def watch(self, principal: str | None, context_id: str) -> None:
        """Check that conversation now (and on every rescan while it has configs)."""
        key = (principal, context_id)
        self._watched.add(key)
        worker = self._workers.get(key)
        if worker is not None and not worker.done():
            self._again.add(key)  # checked again once the running check ends
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - no loop: the next start or rescan checks
            return
        self._workers[key] = loop.create_task(self._work(key))
        if self._rescan is None:  # an app served without its lifespan rescans too
            self._rescan = loop.create_task(self._rescan_loop())

    def poke(self, task_id: str) -> None:
        """A task's turn ended here: check its conversation for every principal watching."""
        parsed = parse_task_id(task_id)
        if parsed is not None:
            for principal, context_id in list(self._watched):
                if context_id == parsed[0]:
                    self.watch(principal, context_id)

    async def start(self) -> None:
        """Scan every record (deliveries left pending by an earlier process) and rescan."""
        for principal, context_id in await self.store.records.keys():
            self.watch(principal, context_id)
        if self._rescan is None:
            self._rescan = asyncio.get_running_loop().create_task(self._rescan_loop())

    async def stop(self) -> None:
        """Stop every worker (what they did not deliver stays pending)."""
        tasks = [t for t in [self._rescan, *self._workers.values()] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._workers.clear()
        self._rescan = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _rescan_loop(self) -> None:
        while True:
            await asyncio.sleep(self._retry.rescan_seconds)
            for principal, context_id in list(self._watched):
                self.watch(principal, context_id)

    async def _work(self, key: Key) -> None:
        while True:
            self._again.discard(key)
            try:
                if not await self._check(*key):
                    self._watched.discard(key)
            except asyncio.CancelledError:
                raise
            except Exception:  # a store's fault: the next check tries again
                _log.warning("push check of %r failed", key[1], exc_info=True)
            if key not in self._again:
                return

    async def _check(self, principal: str | None, context_id: str) -> bool:
        """Deliver what is pending in one conversation; whether anything may still be (a
        config whose task has not been delivered in a terminal state)."""
        tasks = await self.store.read(principal, context_id)
        checks = [self._deliver(principal, context_id, task_id, config_id)
                  for task_id, configs in tasks.items()
                  for config_id, entry in configs.items()
                  if not is_final(entry.get("delivered"))]
        return any(await asyncio.gather(*checks))  # a slow webhook holds up no other

    async def _deliver(self, principal: str | None, context_id: str, task_id: str,
                       config_id: str) -> bool:
        """Deliver one config's pending state; whether the task may change again."""
        failures = 0
        while True:
            entry = ((await self.store.read(principal, context_id)).get(task_id) or {}).get(
                config_id)
            if entry is None:  # deleted meanwhile
                return False
            config = config_of(entry)
            view = await load_task(self._host, task_id, principal)
            if view is None:  # the task is gone (its conversation deleted): so is its config
                await self._forget(principal, context_id, task_id, config_id)
                return False
            cursor = cursor_of(view)
            if cursor == entry.get("delivered"):
                return not is_final(cursor)
            if await self._post(config, view):
                await self._delivered(principal, context_id, task_id, config_id, cursor)
                failures = 0
                continue  # the task may have moved on while it was sent
            failures += 1
            if failures >= self._retry.attempts:
                _log.warning("push to %s for task %s: %d attempts failed; pending until "
                             "the next check", config.url, task_id, failures)
                return True
            await self._sleep(self._retry.delay(failures))

    async def _post(self, config: a2a_pb2.TaskPushNotificationConfig, view: TaskView) -> bool:
        try:
            await self.policy.check(config.url)  # again: a name may resolve elsewhere now
        except PushURLError as exc:
            _log.warning("push for task %s not sent: %s", view.task.id, exc)
            return False
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._retry.timeout,
                                             follow_redirects=False)
        try:
            response = await self._client.post(config.url, json=notification(view.task),
                                               headers=_headers(config))
        except httpx.HTTPError as exc:
            _log.info("push to %s for task %s failed: %r", config.url, view.task.id, exc)
            return False
        if not response.is_success:
            _log.info("push to %s for task %s answered %d", config.url, view.task.id,
                      response.status_code)
            return False
        return True

    async def _delivered(self, principal: str | None, context_id: str, task_id: str,
                         config_id: str, cursor: str) -> None:
        def edit(tasks: dict[str, Any]) -> bool:
            entry = (tasks.get(task_id) or {}).get(config_id)
            if entry is None or entry.get("delivered") == cursor:
                return False  # deleted meanwhile, or another process recorded it
            entry["delivered"] = cursor
            return True

        await self.store.update(principal, context_id, edit, notify=False)

    async def _forget(self, principal: str | None, context_id: str, task_id: str,
                      config_id: str) -> None:
        def edit(tasks: dict[str, Any]) -> bool:
            return (tasks.get(task_id) or {}).pop(config_id, None) is not None

        await self.store.update(principal, context_id, edit, notify=False)
