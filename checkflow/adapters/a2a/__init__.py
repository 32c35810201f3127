"""A2A adapter (placeholder docstring, completed with the adapter)."""

from checkflow.adapters.a2a._types import A2AMessage, A2APart, Artifact, TaskRejected

__all__ = ["A2AMessage", "A2APart", "Artifact", "TaskRejected"]
