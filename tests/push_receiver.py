"""A webhook receiver on 127.0.0.1 for the A2A push tests: it records every POST and answers
each with the next status of ``answers`` (then ``default``), in a thread of its own, so a
server in this process or in another one reaches it alike."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Delivery:
    """One POST as received, and the status it was answered with."""

    path: str
    headers: dict[str, str]
    body: Any
    status: int
    at: float

    @property
    def state(self) -> str:
        return str(self.body.get("task", {}).get("status", {}).get("state", ""))

    @property
    def task_id(self) -> str:
        return str(self.body.get("task", {}).get("id", ""))


class Receiver:
    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.answers: list[int] = []
        self.default = 200
        self._changed = threading.Condition()
        self.url = ""

    def answer(self) -> int:
        with self._changed:
            return self.answers.pop(0) if self.answers else self.default

    def record(self, delivery: Delivery) -> None:
        with self._changed:
            self.deliveries.append(delivery)
            self._changed.notify_all()

    def wait(self, predicate: Callable[[Delivery], bool], deadline: float = 60.0
             ) -> Delivery:
        """The first delivery matching ``predicate`` (waiting for it up to ``deadline``)."""
        end = time.monotonic() + deadline
        with self._changed:
            while True:
                for delivery in self.deliveries:
                    if predicate(delivery):
                        return delivery
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no such delivery in {deadline}s; got "
                                       f"{[(d.status, d.state) for d in self.deliveries]}")
                self._changed.wait(left)

    async def until(self, predicate: Callable[[Delivery], bool], deadline: float = 60.0
                    ) -> Delivery:
        return await asyncio.to_thread(self.wait, predicate, deadline)

    def accepted(self, state: str | None = None) -> list[Delivery]:
        with self._changed:
            return [d for d in self.deliveries
                    if 200 <= d.status < 300 and (state is None or d.state == state)]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            status = receiver.answer()
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"raw": raw.decode(errors="replace")}
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()
            receiver.record(Delivery(self.path, {k.lower(): v for k, v in self.headers.items()},
                                     body, status, time.monotonic()))

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
