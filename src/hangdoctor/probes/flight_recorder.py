"""PyTorch's Flight Recorder, asked for through the instrumentation.

At a hang the supervisor drops a request file into the status folder; each instrumented rank
answers with `fr-<pid>.json`, its ring buffer of recent collectives
(torch._C._distributed_c10d._dump_fr_trace_json; entries carry collective_seq_id,
profiling_name such as `gloo:all_reduce`, state, input_sizes and the process group).
Format: https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/FlightRecorder.hpp
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path

from hangdoctor.evidence.model import CollectiveRecord, FlightRecord
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.private_files import write_text

REQUEST = protocol.REQUEST_FILE
_ANSWERS = protocol.glob_of(protocol.FLIGHT_RECORDER_PREFIX, protocol.FLIGHT_RECORDER_SUFFIX)
_KEEP = 16  # entries per rank: enough to see where ranks diverged


def request_dumps(status_dir: Path) -> float:
    """Ask every instrumented rank for its Flight Recorder; returns the request time."""
    path = status_dir / REQUEST
    write_text(path, str(time.time()))
    return path.stat().st_mtime


def _entry(raw: Mapping[str, object]) -> CollectiveRecord | None:
    seq = raw.get("collective_seq_id")
    name = str(raw.get("profiling_name") or "")
    if not isinstance(seq, int) or not name:
        return None
    group = raw.get("process_group")
    return CollectiveRecord(
        seq=seq,
        op=name.split(":", 1)[-1],
        state=raw.get("state"),
        process_group=str(group[1] if isinstance(group, list) and len(group) > 1 else group)
        if group is not None
        else None,
        sizes=str(raw.get("input_sizes")) if raw.get("input_sizes") is not None else None,
        retired=raw["retired"] if isinstance(raw.get("retired"), bool) else None,
    )


def _number(value: object) -> int | None:
    try:
        number = int(str(value))
    except ValueError:
        return None
    return number if number >= 0 else None


def _progress(
    trace: dict[str, object], entries: list[dict[str, object]]
) -> tuple[int | None, int | None]:
    """(last enqueued, last completed) collective of the newest entry's process group, from
    the dump's `pg_status` (gloo never marks entries completed; pg_status still counts)."""
    status = trace.get("pg_status")
    if not entries or not isinstance(status, dict):
        return None, None
    group = status.get(str(entries[-1].get("pg_id")))
    if not isinstance(group, dict):
        return None, None
    return (
        _number(group.get("last_enqueued_collective")),
        _number(group.get("last_completed_collective")),
    )


def parse_dump(text: str) -> FlightRecord | None:
    """One `fr-<pid>.json` written by the instrumentation, or None if unusable."""
    try:
        data = json.loads(text)
        raw_entries = [raw for raw in data["trace"].get("entries", []) if isinstance(raw, dict)]
        entries = [e for e in (_entry(raw) for raw in raw_entries) if e]
        enqueued, completed = _progress(data["trace"], raw_entries)
        return FlightRecord(
            pid=int(data["pid"]),
            rank=data.get("rank"),
            entries=tuple(entries[-_KEEP:]),
            last_enqueued=enqueued,
            last_completed=completed,
        )
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError):  # "pid": Infinity
        return None


def collect_dumps(
    status_dir: Path, since: float, expected: int, timeout_s: float = 3.0
) -> list[FlightRecord]:
    """The dumps written after `since`, waiting up to `timeout_s` for `expected` of them."""
    deadline = time.monotonic() + timeout_s
    while True:
        files = [p for p in status_dir.glob(_ANSWERS) if p.stat().st_mtime >= since]
        if len(files) >= expected or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    records = []
    for path in files:
        try:
            record = parse_dump(path.read_text())
        except OSError:
            continue
        if record is not None:
            records.append(record)
    return sorted(records, key=lambda r: (r.rank is None, r.rank, r.pid))
