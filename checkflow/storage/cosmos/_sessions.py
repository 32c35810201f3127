"""``CosmosSessionStore``: agent sessions in Azure Cosmos DB, the item's ETag as the version.

One logical partition per session id (hashed when too long) holding one item with the fixed id
``session``; it may share a container with checkpoints, whose items never use that id. The
encoded session is text in the item: JSON as it is, MessagePack as base64. This module must
never know about checkpoints or workflows.
"""

from __future__ import annotations

import binascii
from typing import Any, Final

import msgspec

from checkflow import state
from checkflow.errors import (
    CorruptSessionError,
    SessionConflictError,
    StateError,
    UnregisteredStateTypeError,
)
from checkflow.sessions import AgentSession, check_write_condition
from checkflow.state import Format
from checkflow.storage.cosmos._layout import (
    convert_item,
    decode_text,
    encode_text,
    item_source,
    partition_key,
)
from checkflow.storage.cosmos._sdk import (
    CosmosHttpResponseError,
    CosmosResource,
    MatchConditions,
    delete_item_if_present,
    read_item_or_none,
    status_of,
)

__all__ = ["CosmosSessionStore"]

SESSION_ID: Final = "session"
SESSION_SCHEMA: Final = "checkflow.session"
SESSION_VERSION: Final = 1


class _SessionItem(msgspec.Struct):
    schema: str
    version: int
    session_id: str
    format: str
    data: str
    etag: str = msgspec.field(name="_etag")


class CosmosSessionStore(CosmosResource):
    """A ``SessionStore`` on a Cosmos DB container partitioned by ``/pk``.

    Versions are the items' ETags: ``set(..., expected_version=v)`` is a replace conditioned on
    ``v`` and raises ``SessionConflictError`` when another writer got there first.
    """

    async def get(self, session_id: str) -> AgentSession | None:
        """A fresh copy of the stored session with ``version`` set, or ``None``.

        A damaged item raises ``CorruptSessionError`` naming it; a state type this process has
        not registered raises ``UnregisteredStateTypeError``.
        """
        pk = partition_key(session_id)
        source = self._source(pk)
        item = await read_item_or_none(self.container, SESSION_ID, pk)
        if item is None:
            return None
        parsed = _parse(item, session_id, source)
        try:
            fmt: Format = "json" if parsed.format == "json" else "msgpack"
            session = state.decode(decode_text(parsed.data, fmt), format=fmt)
        except UnregisteredStateTypeError:
            raise  # not damage: a type this process has not registered
        except (StateError, ValueError, binascii.Error) as exc:
            raise CorruptSessionError(f"session cannot be decoded: {exc}", source=source) from exc
        if not isinstance(session, AgentSession) or session.session_id != session_id:
            held = (f"session {session.session_id!r}" if isinstance(session, AgentSession)
                    else f"a {type(session).__name__}")
            raise CorruptSessionError(
                f"expected session {session_id!r}, the item holds {held}", source=source
            )
        session.version = parsed.etag
        return session

    async def set(
        self, session: AgentSession, *, expected_version: str | None = None, create: bool = False,
        durable: bool = True,
    ) -> str:
        """Store ``session`` if the write's condition holds (see ``SessionStore``); the version.

        Every write is one round trip and durable, so ``durable`` changes nothing.

        A create-only write is ``create_item`` (409 when the item exists); a versioned one is
        a replace conditioned on the ETag (412 when stale, 404 when gone).
        """
        check_write_condition(expected_version, create)
        sid = session.session_id
        pk = partition_key(sid)
        data = state.encode(session, format=self.format, path=f"session[{sid!r}]")
        body = {
            "id": SESSION_ID,
            "pk": pk,
            "kind": "session",
            "schema": SESSION_SCHEMA,
            "version": SESSION_VERSION,
            "session_id": sid,
            "format": self.format,
            "data": encode_text(data, self.format),
        }
        try:
            if create:
                item = await self.container.create_item(body)
            elif expected_version is None:
                item = await self.container.upsert_item(body)
            else:
                item = await self.container.replace_item(
                    SESSION_ID,
                    body,
                    etag=expected_version,
                    match_condition=MatchConditions.IfNotModified,
                )
        except CosmosHttpResponseError as exc:
            refused = (409,) if create else (404, 412) if expected_version is not None else ()
            if status_of(exc) not in refused:
                raise
            raise await self._conflict(sid, expected_version) from exc
        version: str = item["_etag"]
        session.version = version
        return version

    async def delete(self, session_id: str, *, expected_version: str | None = None) -> None:
        """Forget the session (only at ``expected_version`` when given); missing is no error."""
        pk = partition_key(session_id)
        if expected_version is None:
            await delete_item_if_present(self.container, SESSION_ID, pk)
            return
        try:
            await self.container.delete_item(
                SESSION_ID,
                partition_key=pk,
                etag=expected_version,
                match_condition=MatchConditions.IfNotModified,
            )
        except CosmosHttpResponseError as exc:
            if status_of(exc) not in (404, 412):
                raise
            raise await self._conflict(session_id, expected_version) from exc

    async def list_session_ids(self) -> list[str]:
        """Every stored session id, sorted (a cross-partition query over session items)."""
        pager = self.container.query_items(
            "SELECT c.session_id FROM c WHERE c.kind = 'session'")
        return sorted({str(row["session_id"]) async for row in pager})

    async def _conflict(
        self, session_id: str, expected_version: str | None
    ) -> SessionConflictError:
        """The conflict a refused conditional write reports, naming the version there now."""
        current = await self.get(session_id)
        return SessionConflictError(
            session_id,
            expected_version=expected_version,
            actual_version=current.version if current is not None else None,
        )

    def _source(self, pk: str) -> str:
        return item_source(str(getattr(self.container, "id", "?")), pk, SESSION_ID)

    def __repr__(self) -> str:
        return f"CosmosSessionStore(container={getattr(self.container, 'id', '?')!r})"


def _parse(item: Any, session_id: str, source: str) -> _SessionItem:
    parsed = convert_item(
        item, _SessionItem, what="session", error=CorruptSessionError, source=source
    )
    if parsed.schema != SESSION_SCHEMA or parsed.version != SESSION_VERSION:
        raise CorruptSessionError(
            f"unsupported session item {parsed.schema!r} version {parsed.version!r}; this "
            f"release reads {SESSION_SCHEMA!r} version {SESSION_VERSION}",
            source=source,
        )
    if parsed.session_id != session_id or parsed.format not in ("json", "msgpack"):
        raise CorruptSessionError(
            f"item holds session {parsed.session_id!r} in {parsed.format!r}", source=source
        )
    return parsed
