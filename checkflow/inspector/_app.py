"""The two ways the inspector is served: beside a workflow, or over a storage alone.

``InspectorAdapter`` mounts it into ``create_app`` like any protocol adapter (``serve
--inspector``), under the app's principal check, with the native API's routes for writes.
``create_inspector_app`` serves it read-only over a storage with no workflow code
(``checkflow inspect --storage``): no write route exists there at all. This module must
never write to a store.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from checkflow.checkpoints import CheckpointStorage
from checkflow.hosting import (
    NATIVE_EXCEPTION_HANDLERS,
    Host,
    WorkflowHost,
    json_response,
    request_principal,
)
from checkflow.inspector._graph import workflow_graph
from checkflow.inspector._reads import InspectorReader
from checkflow.inspector._routes import docs_routes, inspector_routes
from checkflow.sessions import SessionStore

__all__ = ["InspectorAdapter", "create_inspector_app"]

_PUBLIC_PAGES = ("/inspector", "/inspector/")


def _is_public(path: str) -> bool:
    """Pages and files: a browser loads them before it can send a token; data is not."""
    return path in _PUBLIC_PAGES or path.startswith(("/inspector/assets/", "/docs"))


class InspectorAdapter:
    """The inspector (``/inspector``) and the API reference (``/docs``) beside a served
    workflow.

    ``writable=False`` offers no writes in the pages (``serve`` passes it when the native
    API is not mounted: the pages write through it). The served host must be a
    ``WorkflowHost``: the inspector shows checkpoints, and an agent host keeps none."""

    name = "inspector"
    prefixes = ("/inspector", "/docs")

    def __init__(self, *, writable: bool = True) -> None:
        self.writable = writable

    def is_public(self, path: str) -> bool:
        """Pages and files are public; every ``/inspector/api`` read needs a principal."""
        return _is_public(path)

    def try_it(self, url: str) -> list[str]:
        """The banner's lines: where the inspector and the API reference are."""
        return [f"open the inspector: {url}/inspector/  (API reference: {url}/docs)"]

    def routes(self, host: Host) -> list[BaseRoute]:
        if not isinstance(host, WorkflowHost):
            raise TypeError(f"the inspector needs a WorkflowHost, not {type(host).__name__}: "
                            "it shows workflow checkpoints, and an agent host keeps none")
        readers: list[InspectorReader] = []

        async def reader() -> InspectorReader:
            if not readers:  # the definition resolves on first use, once
                readers.append(InspectorReader(host.session_store, host.checkpoint_storage,
                                               await host.workflow()))
            return readers[0]

        async def meta(request: Request) -> dict[str, Any]:
            workflow = (await reader()).workflow
            return {"mode": "serve", "writable": self.writable, "storage": None,
                    "principal": request_principal(request),
                    "workflow": None if workflow is None else workflow_graph(workflow)}

        return [*inspector_routes(reader, meta), *docs_routes()]


def create_inspector_app(session_store: SessionStore, checkpoint_storage: CheckpointStorage,
                         *, storage: str | None = None) -> Starlette:
    """A read-only inspector over ``session_store`` and ``checkpoint_storage``: every
    principal's conversations, what ``checkflow conversations`` and ``checkpoints`` see.

    Serves ``/inspector`` and ``/healthz``, and nothing that writes. ``storage`` is the URL
    shown in the page's header."""
    shared = InspectorReader(session_store, checkpoint_storage, None, every_principal=True)

    async def reader() -> InspectorReader:
        return shared

    async def meta(request: Request) -> dict[str, Any]:
        return {"mode": "storage", "writable": False, "storage": storage,
                "principal": None, "workflow": None}

    async def root(request: Request) -> Response:
        return RedirectResponse("/inspector/", 307)

    async def healthz(request: Request) -> Response:
        return json_response({"status": "ok"})

    routes: list[BaseRoute] = [
        Route("/", root, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        *inspector_routes(reader, meta, every_principal=True),
    ]
    return Starlette(routes=routes, exception_handlers=NATIVE_EXCEPTION_HANDLERS)
