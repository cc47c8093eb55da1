"""Where the nodes of one job leave messages for each other: a key-value board over a transport
that already exists, never a protocol of our own.

- `StoreBoard`: PyTorch's c10d `TCPStore`, either the job's own (torchrun's rendezvous store,
  or the one `init_process_group` opened at MASTER_ADDR:MASTER_PORT) or one that the first
  node's hangdoctor hosts when the user names a `--coordinator`. Every key is under
  `hangdoctor/<session>/`, so the job's own keys are never touched.
- `DirectoryBoard`: files in a directory every node sees (a report directory on a shared
  filesystem), each written whole and renamed into place.

Each node writes only its own keys; a reader asks for a key and gets None while it is absent,
without waiting. Every call may block on the network or the filesystem: the session calls them
from its own thread, never from the supervisor's loop."""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Protocol

#: How long one store operation may take before it gives up (a node gone, a partition).
STORE_TIMEOUT_S = 5.0
#: What `StoreBoard.get` expects a key to hold, and so hears back for an absent key.
_ABSENT = "\x00hangdoctor:absent\x00"
_ABSENT_BYTES = _ABSENT.encode()


class Board(Protocol):
    """The operations the session needs; all of them may raise OSError or RuntimeError."""

    description: str

    def put(self, key: str, value: bytes) -> None: ...

    def get(self, key: str) -> bytes | None: ...

    def compare_set(self, key: str, expected: str, desired: str) -> str:
        """Set `key` to `desired` if it holds `expected` ("" for absent); its value after."""
        ...

    def add(self, key: str, amount: int) -> int:
        """Add `amount` to the counter `key` (0 when absent); its value after. With 0, one
        read of a count that many nodes move."""
        ...

    def join(self, member: str) -> None: ...

    def members(self) -> list[str]: ...

    def close(self) -> None: ...


class StoreBoard:
    """A board in a c10d TCPStore (torch is imported only here, and only for a job of several
    nodes)."""

    def __init__(self, host: str, port: int, session: str, *, serve: bool = False) -> None:
        from torch.distributed import TCPStore  # type: ignore[attr-defined]

        self.description = f"{'hosted ' if serve else ''}TCPStore {host}:{port}"
        self._prefix = f"hangdoctor/{session}/"
        timeout = datetime.timedelta(seconds=STORE_TIMEOUT_S)
        self._store: Any = TCPStore(
            host, port, is_master=serve, timeout=timeout, wait_for_workers=False
        )
        self._known: dict[int, str] = {}  # member index -> member, as read so far

    def put(self, key: str, value: bytes) -> None:
        self._store.set(self._prefix + key, value)

    def get(self, key: str) -> bytes | None:
        # One request, not two (`check`, then `get`): a compare-and-set whose expected value
        # is one no key holds answers the value, or that value where the key is absent (c10d
        # creates a key only when the expected value is empty). A thousand nodes reading beats
        # and the job's view made half their requests in `check`.
        value = bytes(self._store.compare_set(self._prefix + key, _ABSENT, _ABSENT))
        return None if value == _ABSENT_BYTES else value

    def compare_set(self, key: str, expected: str, desired: str) -> str:
        value = self._store.compare_set(self._prefix + key, expected, desired)
        return bytes(value).decode(errors="replace")

    def add(self, key: str, amount: int) -> int:
        return int(self._store.add(self._prefix + key, amount))

    def join(self, member: str) -> None:
        index = int(self._store.add(self._prefix + "members", 1))
        self._store.set(f"{self._prefix}member/{index}", member.encode())

    def members(self) -> list[str]:
        # Members only join: each is read once (a thousand nodes asking every quarter second
        # for every member would be millions of reads); an index counted but not yet written
        # (a node between its two calls in `join`) is read again next time.
        count = int(self._store.add(self._prefix + "members", 0))
        for index in range(1, count + 1):
            if index not in self._known:
                value = self.get(f"member/{index}")
                if value is not None:
                    self._known[index] = value.decode(errors="replace")
        return sorted(set(self._known.values()))

    def close(self) -> None:
        self._store = None


_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class DirectoryBoard:
    """A board in a directory shared by the nodes: one file per key."""

    def __init__(self, directory: Path) -> None:
        self.root = directory
        self.description = f"directory {directory}"
        (self.root / "members").mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*(_SAFE.sub("_", part) for part in key.split("/")))

    def put(self, key: str, value: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".put-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(value)
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def compare_set(self, key: str, expected: str, desired: str) -> str:
        """Not atomic on a shared filesystem; the session only ever moves a counter to the
        same next value from every node, so a race writes the same thing twice."""
        current = (self.get(key) or b"").decode(errors="replace")
        if current == expected:
            self.put(key, desired.encode())
            return desired
        return current

    def add(self, key: str, amount: int) -> int:
        """A counter as a folder of files, one a unit added (a file's creation is atomic on a
        shared filesystem, a read-modify-write of one file is not)."""
        folder = self._path(key)
        for _ in range(amount):
            folder.mkdir(parents=True, exist_ok=True)
            handle, _name = tempfile.mkstemp(dir=folder, prefix="unit-")
            os.close(handle)
        try:
            return sum(1 for entry in folder.iterdir() if entry.name.startswith("unit-"))
        except FileNotFoundError:
            return 0

    def join(self, member: str) -> None:
        self.put(f"members/{member}", member.encode())

    def members(self) -> list[str]:
        folder = self.root / "members"
        names = []
        for entry in folder.iterdir():
            if not entry.name.startswith("."):
                names.append(entry.read_text(errors="replace"))
        return sorted(names)

    def close(self) -> None:
        pass
