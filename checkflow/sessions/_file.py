"""``FileSessionStore``: one file per session, written in place, safe across processes.

Each session lives in ``<root>/<safe_name(session_id)>.session``: a two-slot file (``_slots``)
whose newest intact record is a versioned envelope holding the original id, the store version
and the codec-encoded session. A compare-and-set runs under an ``asyncio.Lock`` per session
id (in this loop) and a lock on that session id alone in the store's permanent lock file
(across threads and processes: ``key_lock``), taken in a worker thread, so writes of
different sessions never wait for each other's disk syncs.

A write goes into the slot that does not hold the last durable record. A durable write is
flushed there (one ``fdatasync``: no temporary file, rename or folder sync); a write whose
loss is harmless (``durable=False``, a lease) is not synced at all, and a crash brings back
the last durable record, never a torn one. A create-only write, a record that outgrows its
slot and the first write to a version 1 file (one envelope, replaced whole: still read) make
the file whole with ``atomic_write``, always durably (later writes in place flush data only,
which would not make the file's name durable). Reads take no lock unless they meet a slot
mid-write (then a shared one), and open nothing for writing, so they work on a read-only
store; disk faults surface as ``StorageError``s. This module must never block the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec

from checkflow import state
from checkflow._fs import (
    LoopLocks,
    PathMemo,
    atomic_write,
    fsync_directory,
    key_lock,
    os_errors_as,
    safe_name,
    write_at,
)
from checkflow.errors import CorruptSessionError, StateError, StorageError
from checkflow.sessions._session import AgentSession
from checkflow.sessions._slots import HEAD_SIZE, Slots, is_slotted, new_file, pack, read_slots
from checkflow.sessions._versions import (
    check_expected_version,
    check_write_condition,
    new_version,
)
from checkflow.state import Format

__all__ = ["FileSessionStore"]

FILE_FORMAT: Final = "checkflow.session"
FILE_VERSION: Final = 1  # the envelope's version (a two-slot file holds version 1 envelopes)
_SUFFIX: Final = ".session"
_LOCK_NAME: Final = ".lock"


_T = TypeVar("_T")


class _Header(msgspec.Struct):
    """What every version of the envelope has: read first so a newer file fails clearly."""

    format: Any = None
    version: Any = None


class _SessionFile(msgspec.Struct, frozen=True):
    """Envelope version 1. ``session`` is the codec's bytes for the ``AgentSession``.

    A file of envelope version 1 alone (the whole file one envelope) is what releases before
    the two-slot file wrote; it is still read, and made a two-slot file by its next write.
    """

    format: str
    version: int
    session_id: str
    revision: str
    session: msgspec.Raw


_JSON_HEADER: Final = msgspec.json.Decoder(_Header)
_MSGPACK_HEADER: Final = msgspec.msgpack.Decoder(_Header)
_JSON_FILE: Final = msgspec.json.Decoder(_SessionFile)
_MSGPACK_FILE: Final = msgspec.msgpack.Decoder(_SessionFile)
_JSON_ENCODER: Final = msgspec.json.Encoder()
_MSGPACK_ENCODER: Final = msgspec.msgpack.Encoder()


class FileSessionStore:
    """A ``SessionStore`` in a folder: any session id, atomic writes, cross-process CAS.

    ``format`` ("json", readable, or "msgpack", compact) is what new writes use; files in
    either format are read.
    """

    def __init__(self, root: str | os.PathLike[str], *, format: Format = "json") -> None:
        if format not in ("json", "msgpack"):
            raise ValueError(f"format must be 'json' or 'msgpack', not {format!r}")
        self.root = Path(root)  # fixed: the paths below are made from it once
        self.format: Format = format
        self._lock: LoopLocks[str] = LoopLocks()
        self._lock_file = self.root / _LOCK_NAME
        self._paths = PathMemo(functools.partial(_session_path, self.root))

    def path_for(self, session_id: str) -> Path:
        """The file that holds ``session_id`` (named by a hash; the id is stored inside)."""
        return self._paths(session_id)

    async def get(self, session_id: str) -> AgentSession | None:
        """A fresh copy of the stored session or ``None``; a bad file: ``CorruptSessionError``."""
        path = self.path_for(session_id)
        with _faults("session read", self, session_id):
            payload = await asyncio.to_thread(self._read_envelope, session_id)
        if payload is None:
            return None
        envelope = _parse(payload, path, session_id)
        try:
            session = state.decode(bytes(envelope.session), format=_sniff(payload))
        except StateError as exc:
            raise CorruptSessionError(
                f"session state cannot be decoded: {exc}", source=str(path)
            ) from exc
        if not isinstance(session, AgentSession) or session.session_id != session_id:
            held = (f"session {session.session_id!r}" if isinstance(session, AgentSession)
                    else f"a {type(session).__name__}")
            raise CorruptSessionError(
                f"expected session {session_id!r}, the file holds {held}", source=str(path)
            )
        session.version = envelope.revision
        return session

    async def set(
        self, session: AgentSession, *, expected_version: str | None = None, create: bool = False,
        durable: bool = True,
    ) -> str:
        """Store ``session`` if the write's condition holds (see ``SessionStore``); the version.

        ``durable=False`` syncs nothing (a crash may bring back the last durable version,
        never a torn file); a create-only write syncs regardless.
        """
        check_write_condition(expected_version, create)
        encoded = state.encode(session, format=self.format, path=f"session[{session.session_id!r}]")
        async with self._lock(session.session_id):
            with _faults("session write", self, session.session_id):
                version = await asyncio.to_thread(
                    self._compare_and_write, session.session_id, encoded, expected_version,
                    create, durable or create,
                )
        session.version = version
        return version

    async def delete(self, session_id: str, *, expected_version: str | None = None) -> None:
        """Remove the session's file (only at ``expected_version`` when given); missing is fine."""
        async with self._lock(session_id):
            with _faults("session delete", self, session_id):
                await asyncio.to_thread(self._compare_and_unlink, session_id, expected_version)

    async def list_session_ids(self) -> list[str]:
        """Every stored session id, sorted (reads each file's envelope for its id)."""
        return await asyncio.to_thread(self._list_ids)

    def _list_ids(self) -> list[str]:
        found = []
        try:
            paths = list(self.root.glob(f"*{_SUFFIX}"))
        except FileNotFoundError:
            return []
        for path in paths:
            data = _read_or_none(path)
            if data is None:
                continue  # deleted meanwhile
            payload, _ = _contents(data, path)
            found.append(_decode_as(_JSON_FILE, _MSGPACK_FILE, payload, path,
                                    "malformed session envelope").session_id)
        return sorted(found)

    # -- worker-thread side (each holds the cross-process lock for its whole check-and-act) --

    def _compare_and_write(
        self, session_id: str, encoded: bytes, expected_version: str | None, create: bool,
        durable: bool,
    ) -> str:
        try:
            return self._write_locked(session_id, encoded, expected_version, create, durable)
        except FileNotFoundError:
            pass  # the store's first write (or its folder was removed): nothing was written
        self.root.mkdir(parents=True, exist_ok=True)  # (another thread may have made it now)
        return self._write_locked(session_id, encoded, expected_version, create, durable)

    def _write_locked(
        self, session_id: str, encoded: bytes, expected_version: str | None, create: bool,
        durable: bool,
    ) -> str:
        path = self.path_for(session_id)
        conditional = expected_version is not None or create
        with key_lock(self._lock_file, session_id):
            try:
                fd: int | None = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
            except FileNotFoundError:
                fd = None
            try:
                slots, actual, data = None, None, b""
                if fd is not None:
                    data = _read_fd(fd)
                    slots, actual = _current(data, path, session_id, strict=conditional)
                if conditional:
                    check_expected_version(session_id, expected_version=expected_version,
                                           actual_version=actual, create=create)
                version = new_version()
                envelope = _SessionFile(
                    FILE_FORMAT, FILE_VERSION, session_id, version, msgspec.Raw(encoded)
                )
                encoder = _JSON_ENCODER if self.format == "json" else _MSGPACK_ENCODER
                payload = encoder.encode(envelope)
                sequence = slots.newest.sequence + 1 if slots and slots.newest else 1
                if fd is not None and slots is not None and slots.fits(payload):
                    _write_slot(fd, pack(payload, sequence, durable=durable), slots.offset(),
                                data, durable)
                    return version
            finally:
                if fd is not None:
                    os.close(fd)
            # Always durably, even for a lease: later writes go in place with a data flush
            # only, which would not make this file's name durable.
            atomic_write(path, new_file(payload, sequence))
        return version

    def _read_envelope(self, session_id: str) -> bytes | None:
        """The envelope the session's file holds (``None``: no file). A file with a slot
        failing its checksum is read again under the session's shared lock (a write in
        progress elsewhere), so a reader never mistakes it for a crash's leftover and returns
        the record before the newest. A store that cannot be locked (read-only) has no
        writer: its first read stands."""
        path = self.path_for(session_id)
        data = _read_or_none(path)
        if data is None:
            return None
        try:
            payload, slots = _contents(data, path)
            if slots is None or not slots.torn:
                return payload
        except CorruptSessionError:
            pass  # damaged, or met mid-write: read again once the writer is done
        with contextlib.ExitStack() as locked:
            try:
                locked.enter_context(key_lock(self._lock_file, session_id, shared=True))
            except OSError:
                return _contents(data, path)[0]
            data = _read_or_none(path)
        return None if data is None else _contents(data, path)[0]

    def _compare_and_unlink(self, session_id: str, expected_version: str | None) -> None:
        if not self.root.is_dir():
            check_expected_version(
                session_id, expected_version=expected_version, actual_version=None
            )
            return
        with key_lock(self._lock_file, session_id):
            if expected_version is not None:
                check_expected_version(
                    session_id,
                    expected_version=expected_version,
                    actual_version=self._revision_or_none(session_id),
                )
            path = self.path_for(session_id)
            if path.exists():
                path.unlink(missing_ok=True)
                fsync_directory(self.root)  # a deleted session must not come back

    def _revision_or_none(self, session_id: str) -> str | None:
        path = self.path_for(session_id)
        current = _read_or_none(path)
        return None if current is None else _current(current, path, session_id)[1]


def _session_path(root: Path, session_id: str) -> Path:
    return root / f"{safe_name(session_id)}{_SUFFIX}"


def _faults(operation: str, store: FileSessionStore, session_id: str) -> Any:
    """Disk faults (full, read-only, I/O) as typed ``StorageError``s naming the file."""
    return os_errors_as(
        lambda exc: StorageError.from_os_error(
            exc, operation=operation, resource=str(store.path_for(session_id)))
    )


def _read_or_none(path: Path) -> bytes | None:
    """The whole file, or ``None`` if it does not exist (fewer system calls than
    ``Path.read_bytes``: session files are small, read on every turn)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _write_slot(fd: int, record: bytes, offset: int, before: bytes, durable: bool) -> None:
    """Write ``record`` into its slot; if that fails (a full disk, a failed flush), put the
    slot's previous bytes back and flush them, so a write reported failed is not read later
    (a reader in between may have seen it: its compare-and-set then fails). If even that
    fails, the record's head is zeroed, which makes the slot read as empty."""
    try:
        write_at(fd, record, offset, sync=durable)
    except BaseException:
        try:
            write_at(fd, before[offset:offset + len(record)], offset, sync=True)
        except OSError:
            with contextlib.suppress(OSError):  # the other slot is intact anyway
                write_at(fd, bytes(HEAD_SIZE), offset, sync=True)
        raise


def _read_fd(fd: int) -> bytes:
    """All of an open file, from its start."""
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0)
    while len(data) < size and (more := os.pread(fd, size - len(data), len(data))):
        data += more
    return data


def _contents(data: bytes, path: Path) -> tuple[bytes, Slots | None]:
    """The envelope a file holds (its newest intact record), and its slots if it has two."""
    if not is_slotted(data):
        return data, None
    try:
        slots = read_slots(data)
    except ValueError as exc:
        raise CorruptSessionError(f"not a session file ({exc})", source=str(path)) from exc
    if slots.newest is None:
        raise CorruptSessionError("session file has no intact record in either slot",
                                  source=str(path))
    return slots.newest.payload, slots


def _current(data: bytes, path: Path, session_id: str, *, strict: bool = True
             ) -> tuple[Slots | None, str | None]:
    """A file's slots (if it has two) and current revision, for a write. ``strict=False``
    (an unconditional write, which replaces whatever is there) reads a damaged file as
    no file, so the write heals it."""
    try:
        payload, slots = _contents(data, path)
        return slots, _parse(payload, path, session_id).revision
    except CorruptSessionError:
        if strict:
            raise
        return None, None


def _sniff(data: bytes) -> Format:
    """JSON envelopes start with ``{``; a msgpack map never does."""
    return "json" if data[:1] == b"{" else "msgpack"


def _decode_as(
    json_decoder: msgspec.json.Decoder[_T],
    msgpack_decoder: msgspec.msgpack.Decoder[_T],
    data: bytes,
    path: Path,
    problem: str,
) -> _T:
    decoder = json_decoder if _sniff(data) == "json" else msgpack_decoder
    try:
        return decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptSessionError(f"{problem} ({exc})", source=str(path)) from exc
    except RecursionError as exc:
        raise CorruptSessionError(f"{problem} (nested too deeply)", source=str(path)) from exc


def _parse(data: bytes, path: Path, session_id: str) -> _SessionFile:
    """Validate the envelope: known format and version, and the right session id."""
    header = _decode_as(_JSON_HEADER, _MSGPACK_HEADER, data, path, "not a session file")
    if header.format != FILE_FORMAT:
        raise CorruptSessionError(
            f"not a session file: format is {header.format!r}, expected {FILE_FORMAT!r}",
            source=str(path),
        )
    if header.version != FILE_VERSION:
        raise CorruptSessionError(
            f"unsupported session file version {header.version!r}; this release reads "
            f"version {FILE_VERSION}",
            source=str(path),
        )
    envelope = _decode_as(_JSON_FILE, _MSGPACK_FILE, data, path, "malformed session envelope")
    if envelope.session_id != session_id:
        raise CorruptSessionError(
            f"file holds session {envelope.session_id!r}, not {session_id!r}", source=str(path)
        )
    return envelope
