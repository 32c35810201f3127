"""The run metrics: two counters and three histograms, with bounded attributes only.

Attributes are the workflow name and the storage kind (and a run's final status): never a
conversation, checkpoint or snapshot id, whose cardinality is unbounded. This module must
never open spans.
"""

from __future__ import annotations

from opentelemetry.metrics import Meter

from checkflow.telemetry import _names as n

__all__ = ["Instruments"]


class Instruments:
    """The instruments of one meter, and one method per thing that happened."""

    def __init__(self, meter: Meter) -> None:
        self.runs = meter.create_counter(
            n.RUNS_METRIC, unit="{run}", description="workflow runs ended, by final status")
        self.commits = meter.create_counter(
            n.COMMITS_METRIC, unit="{commit}", description="snapshots committed")
        self.superstep_duration = meter.create_histogram(
            n.SUPERSTEP_DURATION_METRIC, unit="s",
            description="one superstep, first delivery to committed snapshot")
        self.commit_duration = meter.create_histogram(
            n.COMMIT_DURATION_METRIC, unit="s", description="one snapshot commit")
        self.commit_size = meter.create_histogram(
            n.COMMIT_SIZE_METRIC, unit="By", description="encoded state bytes of a commit")

    def run_ended(self, workflow: str, storage: str, status: str) -> None:
        self.runs.add(1, {n.WORKFLOW_NAME: workflow, n.STORAGE: storage, n.RUN_STATUS: status})

    def superstep_ended(self, workflow: str, storage: str, seconds: float) -> None:
        self.superstep_duration.record(seconds, {n.WORKFLOW_NAME: workflow, n.STORAGE: storage})

    def committed(self, workflow: str, storage: str, seconds: float, size: int) -> None:
        attributes = {n.WORKFLOW_NAME: workflow, n.STORAGE: storage}
        self.commits.add(1, attributes)
        self.commit_duration.record(seconds, attributes)
        self.commit_size.record(size, attributes)
