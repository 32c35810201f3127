"""Span, attribute and metric names: the one list ``docs/telemetry.md`` documents.

Names follow the OpenTelemetry semantic conventions where one exists (``gen_ai.*`` from the
GenAI agent-span conventions, ``http.*``/``url.*`` from the HTTP server conventions, the
``error.type`` attribute); checkflow's own concepts use unprefixed dotted names as the issue
fixes them (``workflow.name``, ``checkpoint.id``, ...). This module must never import
OpenTelemetry: it is plain constants.
"""

from __future__ import annotations

from typing import Final

INSTRUMENTATION: Final = "checkflow"

# spans
RUN_SPAN: Final = "workflow.run"
SUPERSTEP_SPAN: Final = "workflow.superstep"
EXECUTOR_SPAN: Final = "executor.process"
COMMIT_SPAN: Final = "checkpoint.commit"

# attributes (checkflow's own)
WORKFLOW_NAME: Final = "workflow.name"
CHECKPOINT_ID: Final = "checkpoint.id"
STORAGE: Final = "checkpoint.storage"
HEAD_ID: Final = "snapshot.head_id"
START_HEAD_ID: Final = "snapshot.start_head_id"
RUN_KIND: Final = "run.kind"
RUN_STATUS: Final = "run.status"
RUN_SUPERSTEPS: Final = "run.supersteps"
RUN_PENDING: Final = "run.pending_requests"
EARLIER_RUNS: Final = "run.earlier_runs"
SUPERSTEP: Final = "superstep"
SUPERSTEP_EXECUTORS: Final = "superstep.executor_ids"
EXECUTOR_ID: Final = "executor.id"
EXECUTOR_TYPE: Final = "executor.type"
MESSAGE_TYPE: Final = "message.type"
SNAPSHOT_ID: Final = "snapshot.id"
SNAPSHOT_PARENT_ID: Final = "snapshot.parent_id"
SNAPSHOT_BOUNDARY: Final = "snapshot.boundary"
SNAPSHOT_BYTES: Final = "snapshot.encoded_bytes"
ADAPTER: Final = "checkflow.adapter"
PRINCIPAL_PRESENT: Final = "checkflow.principal.present"

# attributes (semantic conventions)
CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_OPERATION: Final = "gen_ai.operation.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
ERROR_TYPE: Final = "error.type"
HTTP_METHOD: Final = "http.request.method"
HTTP_ROUTE: Final = "http.route"
HTTP_STATUS: Final = "http.response.status_code"
URL_PATH: Final = "url.path"

# metrics
RUNS_METRIC: Final = "checkflow.workflow.runs"
COMMITS_METRIC: Final = "checkflow.checkpoint.commits"
SUPERSTEP_DURATION_METRIC: Final = "checkflow.workflow.superstep.duration"
COMMIT_DURATION_METRIC: Final = "checkflow.checkpoint.commit.duration"
COMMIT_SIZE_METRIC: Final = "checkflow.checkpoint.commit.size"
