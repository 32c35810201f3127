"""The session file's two-slot layout (file version 2): writes in place that never tear the
last durable record.

A file is two slots of equal size (half the file, a multiple of 4 KiB). Each slot holds one
record: a 24-byte head (magic ``CFS2``, CRC-32 of everything after it, a sequence number, the
payload's length, flags) and the payload (the session envelope). The newest intact record
(highest sequence) is the session; a slot whose checksum fails is ignored.

A write goes into the slot that does *not* hold the newest durable record, so that record is
never overwritten until a newer one is on disk:

- a durable write ``fdatasync``s its slot before it returns; the file's size and blocks never
  change, so that is one data flush and no folder sync;
- a write whose loss is harmless (a lease) is not synced at all: a crash tears at most its
  own slot, and the newest durable record, in the other slot, is read instead.

A file is made whole (temporary file, fsync, rename) when it is created, when a record
outgrows its slot, or when the file is still in envelope version 1. Pure functions: the
store does the I/O.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Final

__all__ = ["HEAD_SIZE", "MAGIC", "Record", "Slots", "is_slotted", "new_file", "pack", "read_slots"]

MAGIC: Final = b"CFS2"
_HEAD: Final = struct.Struct("<4sIQII")  # magic, crc32, sequence, length, flags
_CHECKED: Final = struct.Struct("<QII")  # what the CRC covers before the payload
HEAD_SIZE: Final = _HEAD.size
_DURABLE: Final = 1
_PAGE: Final = 4096


@dataclass(frozen=True, slots=True)
class Record:
    """One intact slot's record."""

    slot: int
    sequence: int
    durable: bool
    payload: bytes


@dataclass(frozen=True, slots=True)
class Slots:
    """What a two-slot file holds: its newest record, and where the next write goes.

    ``torn`` says a slot failed its checksum: after a crash that is a write that never
    finished; while another thread or process may be writing, the reader looks again under
    the session's lock before trusting the other slot.
    """

    slot_size: int
    newest: Record | None
    target: int
    torn: bool

    def fits(self, payload: bytes) -> bool:
        return HEAD_SIZE + len(payload) <= self.slot_size

    def offset(self) -> int:
        """Where the next record is written."""
        return self.target * self.slot_size


def is_slotted(data: bytes) -> bool:
    """Whether ``data`` is to be read as a two-slot file: one whose either slot starts with
    the magic, else anything but a version 1 envelope (one JSON object or one MessagePack map
    of five fields), so a damaged first byte never passes a two-slot file off as version 1."""
    half = len(data) // 2
    if len(data) >= 2 * _PAGE and len(data) % (2 * _PAGE) == 0 and MAGIC in (
            data[:4], data[half:half + 4]):
        return True
    return data[:1] not in (b"{", b"\x85")


def pack(payload: bytes, sequence: int, *, durable: bool) -> bytes:
    """One record: the head and the payload (the slot's tail beyond it is never read)."""
    flags = _DURABLE if durable else 0
    checked = _CHECKED.pack(sequence, len(payload), flags)
    crc = zlib.crc32(payload, zlib.crc32(checked))
    return _HEAD.pack(MAGIC, crc, sequence, len(payload), flags) + payload


def new_file(payload: bytes, sequence: int) -> bytes:
    """A whole file holding ``payload`` in slot 0, the other slot empty.

    Its record is marked durable: the store syncs the file and its folder before anything
    else is written (``atomic_write``), whatever the write asked for. Slots have
    room for the record to double before the file must be made again; every byte is
    written (no holes), so later writes in place never allocate.
    """
    record = pack(payload, sequence, durable=True)
    slot_size = max(_PAGE, -(-2 * len(record) // _PAGE) * _PAGE)
    return record + bytes(2 * slot_size - len(record))


def read_slots(data: bytes) -> Slots:
    """Parse a two-slot file; ``ValueError`` names what makes it unreadable as one."""
    if len(data) < 2 * _PAGE or len(data) % (2 * _PAGE):
        raise ValueError(f"a two-slot session file is whole pages in two halves; this one is "
                         f"{len(data)} bytes")
    slot_size = len(data) // 2
    records: list[Record | None] = []
    torn = False
    for slot in (0, 1):
        record, bad = _record(data, slot, slot_size)
        records.append(record)
        torn = torn or bad
    intact = [r for r in records if r is not None]
    newest = max(intact, key=lambda r: r.sequence, default=None)
    durable = max((r for r in intact if r.durable), key=lambda r: r.sequence, default=None)
    # Never overwrite the newest durable record; with none intact (a double fault), spare
    # the newest intact one.
    spared = durable if durable is not None else newest
    target = 1 - spared.slot if spared is not None else 1
    return Slots(slot_size, newest, target, torn)


def _record(data: bytes, slot: int, slot_size: int) -> tuple[Record | None, bool]:
    """The slot's record if intact; and whether it is torn (an empty slot is not)."""
    start = slot * slot_size
    head = data[start:start + _HEAD.size]
    if head == bytes(_HEAD.size):
        return None, False  # never written
    magic, crc, sequence, length, flags = _HEAD.unpack(head)
    end = start + _HEAD.size + length
    if magic != MAGIC or end > start + slot_size:
        return None, True
    payload = data[start + _HEAD.size:end]
    if zlib.crc32(payload, zlib.crc32(_CHECKED.pack(sequence, length, flags))) != crc:
        return None, True
    return Record(slot, sequence, bool(flags & _DURABLE), payload), False
