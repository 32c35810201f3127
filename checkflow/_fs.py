"""Small, careful file-system primitives shared by the file checkpoint storage and session store.

The file primitives are synchronous and blocking: callers run them off the event loop
(``asyncio.to_thread``). ``LoopLocks`` is the in-process half of the same locking: one
``asyncio.Lock`` per key, taken before a worker thread takes the ``flock``. This module must
never import anything else from checkflow.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import struct
import tempfile
import weakref
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

__all__ = [
    "LoopLocks",
    "PathMemo",
    "atomic_write",
    "exclusive_lock",
    "fsync_directory",
    "key_lock",
    "os_errors_as",
    "safe_name",
    "shared_lock",
    "write_at",
]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


@functools.lru_cache(maxsize=4096)  # a turn names its conversation's files several times
def safe_name(identifier: str) -> str:
    """Map any id (``../x``, ``a/b``, ``CON``, 300 characters, ...) to a safe, fixed-size name.

    The name is a hash, so ids can never escape a root folder or collide on case-insensitive
    or reserved names; the original id must be stored inside the file or folder.
    """
    return hashlib.blake2b(identifier.encode("utf-8"), digest_size=20).hexdigest()


def fsync_directory(path: Path) -> None:
    """Make a rename or a new entry in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, sync_directory: bool = True) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new file whole.

    Writes a temporary file in the same folder, fsyncs it, ``os.replace``s it over ``path``
    and fsyncs the folder. ``sync_directory=False`` skips that last fsync: the file is still
    never torn, but a crash may bring back the previous file (for a write whose loss is
    harmless; the next write that syncs the folder makes it durable too).
    """
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_directory:
        fsync_directory(directory)


def write_at(fd: int, data: bytes, offset: int, *, sync: bool) -> None:
    """Write all of ``data`` at ``offset`` of an open file, in place.

    ``sync`` flushes it before returning with ``fdatasync`` (``fsync`` where the system has
    none): for a write that neither grows the file nor fills a hole, that is the data alone,
    with no metadata to commit.
    """
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written
    if sync:
        getattr(os, "fdatasync", os.fsync)(fd)


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing, never deleted).

    Blocks the calling thread until the lock is free: call it from a worker thread.
    The lock file is permanent so that two processes always lock the same inode. Needs
    ``fcntl`` (POSIX): elsewhere it raises ``NotImplementedError`` naming the stores to use
    instead, and ``import checkflow`` itself never needs it.
    """
    fcntl = _fcntl()
    with _flocked(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), fcntl, fcntl.LOCK_EX):
        yield


@contextlib.contextmanager
def _flocked(fd: int, fcntl: Any, mode: int) -> Iterator[None]:
    """Hold ``flock(fd, mode)`` for the block, then unlock and close ``fd``."""
    try:
        fcntl.flock(fd, mode)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _fcntl() -> Any:
    """The ``fcntl`` module, imported where a lock is taken so ``import checkflow`` never
    needs it; where it is missing, ``NotImplementedError`` names the stores to use instead."""
    try:
        import fcntl
    except ImportError:
        raise NotImplementedError(
            "the file stores need fcntl (Linux, macOS and other POSIX systems); on this "
            "platform use the memory: or cosmos: storage") from None
    return fcntl


_FLOCK_STRUCT = "hhqqi4x"  # struct flock: l_type, l_whence, l_start, l_len, l_pid


@contextlib.contextmanager
def key_lock(path: Path, key: str, *, shared: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on ``key`` alone, in the permanent lock file ``path``.

    Where the system has open-file-description record locks (Linux), it locks one byte at an
    offset given by a 62-bit hash of ``key``, so writers of different keys never wait for
    each other (across threads and processes alike) and no lock file per key piles up.
    Elsewhere it falls back to ``exclusive_lock(path)``: correct, but one writer at a time.
    ``shared=True`` is a reader's lock: it waits for the key's writer only, opens the lock
    file read-only and never creates it (a missing file: ``FileNotFoundError``).
    Blocks the calling thread: call it from a worker thread.
    """
    fcntl = _fcntl()
    ofd_lock = getattr(fcntl, "F_OFD_SETLKW", None)  # Linux >= 3.15; else whole-file flock
    if ofd_lock is None:
        if shared:
            with _flocked(os.open(path, os.O_RDONLY), fcntl, fcntl.LOCK_SH):
                yield
            return
        with exclusive_lock(path):
            yield
        return
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    offset = int.from_bytes(digest, "big") >> 2  # below 2**62: a valid off_t
    fd = os.open(path, os.O_RDONLY) if shared else os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    kind = fcntl.F_RDLCK if shared else fcntl.F_WRLCK
    try:
        fcntl.fcntl(fd, ofd_lock, struct.pack(_FLOCK_STRUCT, kind, os.SEEK_SET,
                                               offset, 1, 0))
        try:
            yield
        finally:
            fcntl.fcntl(fd, ofd_lock, struct.pack(_FLOCK_STRUCT, fcntl.F_UNLCK, os.SEEK_SET,
                                                   offset, 1, 0))
    finally:
        os.close(fd)


@contextlib.contextmanager
def shared_lock(path: Path) -> Iterator[None]:
    """Hold a shared ``flock`` on ``path`` for reading, never opening it for writing.

    Readers exclude writers (who hold ``exclusive_lock``) but not each other. Without a lock
    file (a store nothing ever wrote to, or a read-only copy without one) or when it cannot
    be opened, the read goes ahead unlocked: on a read-only store there is no writer to wait
    for. Blocks the calling thread: call it from a worker thread.
    """
    fcntl = _fcntl()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        yield
        return
    with _flocked(fd, fcntl, fcntl.LOCK_SH):
        yield


@contextlib.contextmanager
def os_errors_as(wrap: Callable[[OSError], Exception]) -> Iterator[None]:
    """Re-raise any ``OSError`` escaping the block as ``wrap(error)`` (chained to it).

    Stores use it to turn a disk fault into their typed storage error at the boundary.
    """
    try:
        yield
    except OSError as exc:
        raise wrap(exc) from exc


class PathMemo(Generic[T]):
    """What ``make(id)`` returns, remembered for the last few thousand ids.

    A store names a conversation's files a dozen times a turn, and each ``Path`` costs a
    parse and, once opened, a ``str``; the remembered ones are built once. Paths never
    change, so nothing is ever stale; past ``size`` ids the memo simply starts again.
    """

    def __init__(self, make: Callable[[str], T], size: int = 4096) -> None:
        self._make = make
        self._size = size
        self._items: dict[str, T] = {}

    def __call__(self, key: str) -> T:
        found = self._items.get(key)
        if found is None:
            if len(self._items) >= self._size:
                self._items.clear()
            found = self._items[key] = self._make(key)
        return found


class LoopLocks(Generic[K]):
    """One ``asyncio.Lock`` per key and event loop, dropped once nobody holds or awaits it.

    A lock belongs to the loop it is first used on, so a store shared by several loops (one
    per thread, or one per test) keeps a table per loop; weak references keep the tables
    from growing with every id ever locked.
    """

    def __init__(self) -> None:
        self._tables: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, weakref.WeakValueDictionary[K, asyncio.Lock]
        ] = weakref.WeakKeyDictionary()

    def __call__(self, key: K) -> asyncio.Lock:
        """The running loop's lock for ``key``."""
        loop = asyncio.get_running_loop()
        table = self._tables.get(loop)
        if table is None:
            table = self._tables[loop] = weakref.WeakValueDictionary()
        lock = table.get(key)
        if lock is None:
            lock = table[key] = asyncio.Lock()
        return lock
