"""The one state codec: registered types <-> JSON or MessagePack, for snapshots and sessions."""

from checkflow.state._codec import Format, decode, encode, from_builtins, to_builtins
from checkflow.state._inspect import OpaqueValue, decode_for_inspection
from checkflow.state._registry import (
    is_registered,
    register_state_type,
    registered_type,
    state_type_id,
)

__all__ = [
    "Format",
    "OpaqueValue",
    "decode",
    "decode_for_inspection",
    "encode",
    "from_builtins",
    "is_registered",
    "register_state_type",
    "registered_type",
    "state_type_id",
    "to_builtins",
]
