"""A checkpoint stored by this process resumes in a brand-new interpreter."""

from __future__ import annotations

import json

from engine_samples import Approval, build_review, run_fresh

from checkflow.storage import FileCheckpointStorage
from checkflow.workflows import RunStatus


async def test_pending_requests_come_back_with_their_ids_and_types_in_a_fresh_process(tmp_path):
    storage = FileCheckpointStorage(tmp_path)
    workflow = build_review()
    checkpoint = workflow.create_checkpoint(checkpoint_id="review-1", checkpoint_storage=storage)
    paused = await workflow.run("owls", checkpoint=checkpoint)
    assert paused.pending_requests["approve"].response_type is Approval

    there = json.loads(run_fresh("resume", str(tmp_path), "review-1"))
    assert there["signature"] == workflow.graph_signature_hash
    assert there["status"] == "awaiting_responses"
    assert there["pending"] == {
        "approve": {"response_type_is": "Approval", "source": "reviewer"},
        "urgent": {"response_type_is": "bool", "source": "reviewer"},
    }
    assert there["snapshots"] == 3  # the bare resume committed nothing

    answers = json.dumps({"approve": {"approved": True, "reviewer": "kim"}})
    answered = json.loads(run_fresh("resume", str(tmp_path), "review-1", answers))
    assert answered["outputs"] == ["published by kim: about owls"]
    assert answered["pending"] == {"urgent": {"response_type_is": "bool", "source": "reviewer"}}

    reloaded = await storage.load("review-1")
    result = await workflow.run(responses={"urgent": True}, checkpoint=reloaded)
    assert result.get_outputs() == ["urgent=True"]
    assert result.status is RunStatus.IDLE
    assert reloaded.head_snapshot.state["messages"]["output"] == [
        "published by kim: about owls",
        "urgent=True",
    ]
