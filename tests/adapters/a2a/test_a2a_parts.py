"""Parts and messages <-> workflow values, and the registered A2A types in the state codec."""

from __future__ import annotations

import json

import msgspec
import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError

from checkflow.adapters.a2a import A2AMessage, A2APart, Artifact, TaskRejected
from checkflow.adapters.a2a._parts import (
    artifact_for_output,
    input_value,
    message_from_proto,
    part_from_proto,
    part_to_proto,
    proto_value,
)
from checkflow.errors import CheckflowError
from checkflow.state import decode, encode


def msg(*parts: a2a_pb2.Part) -> a2a_pb2.Message:
    return a2a_pb2.Message(message_id="m1", role=a2a_pb2.ROLE_USER, parts=list(parts))


def to_json(value: object) -> object:
    return msgspec.to_builtins(value)


def test_text_parts_become_one_string() -> None:
    value = input_value(msg(a2a_pb2.Part(text="a"), a2a_pb2.Part(text="b")), whole_message=False)
    assert value == "a\nb"


def test_one_data_part_becomes_its_json_value_with_integral_numbers_as_ints() -> None:
    part = a2a_pb2.Part(data=proto_value({"n": 3, "x": 1.5, "items": [1, 2]}))
    assert input_value(msg(part), whole_message=False) == {"n": 3, "x": 1.5, "items": [1, 2]}


def test_a_file_part_is_refused_unless_the_start_takes_a2a_messages() -> None:
    with pytest.raises(ContentTypeNotSupportedError, match="A2AMessage"):
        input_value(msg(a2a_pb2.Part(raw=b"x")), whole_message=False)


def test_data_mixed_with_other_parts_is_refused_naming_the_parts() -> None:
    with pytest.raises(InvalidParamsError, match="text, data"):
        input_value(msg(a2a_pb2.Part(text="a"), a2a_pb2.Part(data=proto_value(1))),
                    whole_message=False)


def test_a_message_without_parts_is_refused() -> None:
    with pytest.raises(InvalidParamsError, match="no parts"):
        input_value(msg(), whole_message=False)


def test_the_whole_message_keeps_ids_roles_parts_and_metadata() -> None:
    wire = a2a_pb2.Message(message_id="m1", context_id="c1", task_id="t1",
                           role=a2a_pb2.ROLE_USER, parts=[
                               a2a_pb2.Part(text="hi", metadata={"lang": "en"}),
                               a2a_pb2.Part(data=proto_value({"k": 1})),
                               a2a_pb2.Part(raw=b"\x00\x01", filename="f.bin",
                                            media_type="application/octet-stream"),
                               a2a_pb2.Part(url="https://example.com/x.png")])
    wire.metadata.update({"trace": "abc"})
    value = input_value(wire, whole_message=True)
    assert value == A2AMessage(
        message_id="m1", context_id="c1", task_id="t1", role="user", metadata={"trace": "abc"},
        parts=[A2APart.of_text("hi", lang="en"), A2APart.of_data({"k": 1}),
               A2APart.of_file(b"\x00\x01", filename="f.bin",
                               media_type="application/octet-stream"),
               A2APart.of_file(url="https://example.com/x.png")])
    assert decode(encode(value)) == value  # a registered state type: it round-trips


def test_parts_round_trip_through_the_wire_form() -> None:
    for part in (A2APart.of_text("t", a=1), A2APart.of_data([1, {"b": None}]),
                 A2APart.of_file(b"raw", filename="r", media_type="text/plain"),
                 A2APart.of_file(url="https://x/y")):
        assert part_from_proto(part_to_proto(part)) == part


def test_a_part_without_content_is_invalid() -> None:
    with pytest.raises(InvalidParamsError, match="no content"):
        part_from_proto(a2a_pb2.Part())
    with pytest.raises(ValueError, match="exactly one"):
        A2APart(kind="file")


@pytest.mark.parametrize(("output", "field"), [("hello", "text"), (b"\x01", "raw"),
                                               ({"a": [1]}, "data"), (7, "data")])
def test_each_output_becomes_one_artifact_part(output: object, field: str) -> None:
    artifact, append, last = artifact_for_output(output, default_id="x-1", id_prefix="x-",
                                                 to_json=to_json)
    assert artifact.artifact_id == "x-1" and not append and last
    assert [p.WhichOneof("content") for p in artifact.parts] == [field]


def test_an_artifact_output_is_sent_as_given_under_a_prefixed_id() -> None:
    chunk = Artifact(name="report", parts=[A2APart.of_text("part 2")], append=True,
                     last_chunk=True, metadata={"page": 2})
    artifact, append, last = artifact_for_output(chunk, default_id="x-9", id_prefix="x-",
                                                 to_json=to_json)
    assert (artifact.artifact_id, artifact.name, append, last) == ("x-report", "report",
                                                                   True, True)
    assert artifact.parts[0].text == "part 2"
    assert json.loads(json.dumps(dict(artifact.metadata))) == {"page": 2}
    assert decode(encode(chunk)) == chunk


def test_task_rejected_is_a_checkflow_error_carrying_its_reason() -> None:
    error = TaskRejected("not my job")
    assert isinstance(error, CheckflowError) and error.reason == "not my job"
    assert message_from_proto(msg(a2a_pb2.Part(text="x"))).text() == "x"
