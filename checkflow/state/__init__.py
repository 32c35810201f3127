"""The one state codec: registered types <-> JSON or MessagePack, for snapshots and sessions.

This module only re-exports. The codec knows no storage, session or workflow and must never
import one; it never falls back to pickle or to a silent default for an unknown type.
"""

from checkflow.state._codec import Format, Layout, decode, encode, from_builtins, to_builtins
from checkflow.state._depth import (
    DEFAULT_MAX_NESTING_DEPTH,
    max_nesting_depth,
    nesting_depth_exceeds,
    set_max_nesting_depth,
)
from checkflow.state._inspect import OpaqueValue, decode_for_inspection
from checkflow.state._registry import (
    is_registered,
    register_state_type,
    registered_type,
    state_type_id,
)

__all__ = [
    "DEFAULT_MAX_NESTING_DEPTH",
    "Format",
    "Layout",
    "OpaqueValue",
    "decode",
    "decode_for_inspection",
    "encode",
    "from_builtins",
    "is_registered",
    "max_nesting_depth",
    "nesting_depth_exceeds",
    "register_state_type",
    "registered_type",
    "set_max_nesting_depth",
    "state_type_id",
    "to_builtins",
]
