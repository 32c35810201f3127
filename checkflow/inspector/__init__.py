"""The inspector: every hosted conversation in a browser, its snapshot tree, state and diffs.

``InspectorAdapter`` serves it beside a workflow (``checkflow serve --inspector``), answering
pending requests, branching and cancelling through the native API's own routes;
``create_inspector_app`` serves it read-only over a storage (``checkflow inspect
--storage``). Both need the ``hosting`` extra; the pages ship in the package and load
nothing from elsewhere.
"""

from __future__ import annotations

from checkflow._extras import requires_extra

with requires_extra("hosting", "checkflow.inspector"):
    from checkflow.inspector._app import InspectorAdapter, create_inspector_app
    from checkflow.inspector._graph import workflow_graph
    from checkflow.inspector._reads import InspectorReader

__all__ = ["InspectorAdapter", "InspectorReader", "create_inspector_app", "workflow_graph"]
