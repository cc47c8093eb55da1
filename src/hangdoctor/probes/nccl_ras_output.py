"""Reading what NCCL's `ncclras` client prints: its text report (NCCL 2.24 and later) or its
JSON one (`-f json`, NCCL 2.28 and later), into a `RasReport`. Pure: no I/O.

The text report has a job summary, a communicator table, then `Errors` (INCOMPLETE: processes
that sent no data; DEAD: processes unreachable through the RAS network; `#G-C (hash)
INCOMPLETE`/`ERROR` per communicator) and `Warnings` (TIMEOUT; `#G-C (hash) MISMATCH` with
`N ranks have launched up to operation V` and `Rank R ... -- GPU G managed by process P on node
H` lines). RAS names single ranks only where few stand out. Format:
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/ras.html
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hangdoctor.evidence.model import RasCommunicator, RasLaunchCount, RasRank, RasReport
from hangdoctor.i18n import _

MAX_TEXT = 16 * 1024  # of the raw output kept in the bundle

_VERSION = re.compile(r"^NCCL version (\S+)")
_MISSING_PROCESSES = re.compile(r"^\s*Missing communicator data from (\d+) job process")
_DEAD_PROCESSES = re.compile(r"^\s*(\d+) job process(?:es are| is) considered dead")
_PROCESS = re.compile(r"^\s*Process (\d+) on node (\S+) managing GPUs? ([\d,]*)")
_COMM = re.compile(r"^#\d+-\d+ \(([0-9a-fA-Fx]+)\) (INCOMPLETE|ERROR|MISMATCH)\s*$")
_RANK = re.compile(
    r"^\s*Rank (?P<rank>\d+)(?: (?P<what>.*?))? -- (?:GPU (?P<gpu>\d+)(?: \(NVML \d+\))? "
    r"managed by process (?P<pid>\d+) on node (?P<host>\S+)|\[process information not found\])"
)
_DIFFERENT_COUNTS = re.compile(r"^\s*Communicator ranks have different (\S+) operation counts")
_DIFFERENT_STATUS = re.compile(r"^\s*Communicator ranks have different status")
_GROUP = re.compile(
    r"^\s*(\d+) ranks have (?:launched up to operation (\d+)|not launched any operations)"
)
_LAUNCHED = re.compile(r"^has (?:launched up to operation (\d+)|not launched any operations)$")
_ERROR_KIND = re.compile(r"^\s*(Initialization|Asynchronous) errors? on \d+ ranks?")
_ERROR_GROUP = re.compile(r"^\s*(\d+) ranks reported (.+)$")
_TIMEOUTS = re.compile(r"^\s*Encountered (\d+) communication timeouts?")

#: ncclResult_t codes as the JSON report gives them (nccl.h), for its error fields.
_NCCL_RESULTS = {
    1: "Unhandled CUDA error",
    2: "System error",
    3: "Internal error",
    4: "Invalid argument",
    5: "Invalid usage",
    6: "Remote process error",
}
_IN_PROGRESS = 7


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """Its beginning and its end when it is long (the summary, then the warnings)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    left_out = _("[... {count} characters left out ...]", count=len(text) - 2 * half)
    return f"{text[:half]}\n{left_out}\n{text[-half:]}"


def _devices(text: str | None) -> tuple[int, ...]:
    return tuple(int(d) for d in (text or "").split(",") if d.isdigit())


@dataclass
class _Comm:
    """A communicator as the text names it, gathered across its blocks."""

    hash: str
    missing: list[RasRank] = field(default_factory=list)
    launches: list[RasLaunchCount] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class _Reading:
    """Where the text parser is: the block it reads and what it has found."""

    report: dict[str, object] = field(default_factory=dict)
    block: str = ""  # INCOMPLETE, DEAD, TIMEOUT at the job level; comm-INCOMPLETE, ...
    comm: _Comm | None = None
    comms: dict[str, _Comm] = field(default_factory=dict)
    processes: dict[str, list[RasRank]] = field(default_factory=lambda: defaultdict(list))
    operation: str | None = None  # the collective whose counts the MISMATCH block lists
    error_kind: str = ""
    error_what: str = ""


def _add_launch(reading: _Reading, count: int, launched: int, rank: RasRank | None) -> None:
    comm, operation = reading.comm, reading.operation
    if comm is None or operation is None:
        return
    comm.launches.append(
        RasLaunchCount(
            operation=operation,
            launched=launched,
            rank_count=count,
            ranks=(rank,) if rank is not None else (),
        )
    )


def _rank_line(reading: _Reading, match: re.Match[str]) -> None:
    pid = match["pid"]
    rank = RasRank(
        rank=int(match["rank"]),
        host=match["host"],
        pid=int(pid) if pid else None,
        cuda_devices=_devices(match["gpu"]),
    )
    comm, what = reading.comm, (match["what"] or "").strip()
    if comm is None:
        return
    if reading.block == "INCOMPLETE":
        comm.missing.append(rank)
    elif reading.block == "ERROR":
        reported = what.removeprefix("reported ").strip() or reading.error_what
        comm.errors.append(f"rank {rank.rank}: {reading.error_kind} {reported}".strip())
    elif reading.block == "MISMATCH" and reading.operation is not None:
        launched = _LAUNCHED.match(what)
        if launched:
            _add_launch(reading, 1, int(launched[1] or 0), rank)
        elif not what and comm.launches:  # one of the ranks the last `N ranks` line counted
            last = comm.launches[-1]
            comm.launches[-1] = last.model_copy(update={"ranks": (*last.ranks, rank)})


def _line(reading: _Reading, line: str) -> None:
    stripped = line.strip()
    if found := _VERSION.match(line):
        reading.report["nccl_version"] = found[1]
    elif stripped in ("INCOMPLETE", "DEAD", "TIMEOUT"):
        reading.block, reading.comm = stripped, None
    elif stripped in ("Errors", "Warnings"):
        reading.block, reading.comm = "", None
    elif found := _COMM.match(stripped):
        reading.comm = reading.comms.setdefault(found[1], _Comm(found[1]))
        reading.block, reading.operation = found[2], None
    elif found := _MISSING_PROCESSES.match(line):
        reading.report["unresponsive_count"] = int(found[1])
    elif found := _DEAD_PROCESSES.match(line):
        reading.report["dead_count"] = int(found[1])
    elif found := _TIMEOUTS.match(line):
        reading.report["timeouts"] = int(found[1])
    elif (found := _PROCESS.match(line)) and reading.block in ("INCOMPLETE", "DEAD"):
        reading.processes[reading.block].append(
            RasRank(
                pid=int(found[1]),
                host=found[2],
                cuda_devices=_devices(found[3]),
                dead=reading.block == "DEAD",
            )
        )
    elif found := _DIFFERENT_COUNTS.match(line):
        reading.operation = found[1]
    elif _DIFFERENT_STATUS.match(line):
        reading.operation = None
    elif (found := _GROUP.match(line)) and reading.block == "MISMATCH":
        _add_launch(reading, int(found[1]), int(found[2] or 0), None)
    elif found := _ERROR_KIND.match(line):
        reading.error_kind, reading.error_what = f"{found[1].lower()} error", ""
    elif found := _ERROR_GROUP.match(line):
        reading.error_what = found[2].strip()
    elif found := _RANK.match(line):
        _rank_line(reading, found)


def _mark_dead(ranks: Iterable[RasRank], dead: Iterable[RasRank]) -> tuple[RasRank, ...]:
    """The ranks, those whose process RAS considers dead marked so."""
    gone = {(d.host, d.pid) for d in dead}
    return tuple(
        r.model_copy(update={"dead": True}) if (r.host, r.pid) in gone else r for r in ranks
    )


def parse_text(text: str) -> RasReport:
    """The report `ncclras` printed in its text format; lines it does not know are skipped."""
    reading = _Reading()
    for line in text.splitlines():
        _line(reading, line.rstrip())
    dead = tuple(reading.processes["DEAD"])
    unresponsive = tuple(reading.processes["INCOMPLETE"])
    return RasReport(
        format="text",
        nccl_version=_text(reading.report.get("nccl_version")),
        unresponsive=unresponsive,
        unresponsive_count=_count(reading.report.get("unresponsive_count"), len(unresponsive)),
        dead=dead,
        dead_count=_count(reading.report.get("dead_count"), len(dead)),
        timeouts=_count(reading.report.get("timeouts"), 0),
        communicators=tuple(
            RasCommunicator(
                hash=c.hash,
                missing=_mark_dead(c.missing, dead),
                launches=tuple(c.launches),
                errors=tuple(c.errors),
            )
            for c in reading.comms.values()
        ),
        text=clip(text),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object, default: int) -> int:
    return value if isinstance(value, int) and value >= 0 else default


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _json_rank(raw: Mapping[str, object], dead: bool = False) -> RasRank:
    host = raw.get("host")
    device = _int(raw.get("cuda_dev"))
    return RasRank(
        rank=_int(raw.get("rank")),
        host=host if isinstance(host, str) and host != "unknown" else None,
        pid=_int(raw.get("pid")),
        cuda_devices=(device,) if device is not None else (),
        dead=dead,
    )


def _json_launches(ranks: list[tuple[RasRank, Mapping[str, object]]]) -> list[RasLaunchCount]:
    """Per collective whose counts differ between ranks: the ranks at each count."""
    by_op: dict[str, dict[int, list[RasRank]]] = defaultdict(lambda: defaultdict(list))
    for rank, counts in ranks:
        for operation, count in counts.items():
            if (number := _int(count)) is not None:
                by_op[operation][number].append(rank)
    launches = []
    for operation, groups in by_op.items():
        if len(groups) < 2:
            continue  # every rank launched the same number: nothing stands out
        for launched, members in sorted(groups.items(), key=lambda g: (-len(g[1]), -g[0])):
            launches.append(
                RasLaunchCount(
                    operation=operation,
                    launched=launched,
                    rank_count=len(members),
                    ranks=tuple(members),
                )
            )
    return launches


def _json_errors(ranks: list[tuple[RasRank, Mapping[str, object]]]) -> list[str]:
    errors = []
    for rank, status in ranks:
        for key, kind in (("init_state", "initialization"), ("async_error", "asynchronous")):
            code = _int(status.get(key))
            if code and code != _IN_PROGRESS:
                what = _NCCL_RESULTS.get(code, f"error {code}")
                errors.append(f"rank {rank.rank}: {kind} error {what}")
    return errors


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, dict) else {}


def _entries(value: object) -> list[Mapping[str, object]]:
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _json_communicator(raw: Mapping[str, object]) -> RasCommunicator:
    parsed = [(_json_rank(r), r) for r in _entries(raw.get("ranks"))]
    missing = []
    for entry in _entries(raw.get("missing_ranks")):
        status = _mapping(entry.get("status"))
        dead = status.get("considered_dead") is True
        if dead or status.get("unresponsive") is True:  # else it answered, without this comm
            missing.append(_json_rank(entry, dead=dead))
    return RasCommunicator(
        hash=str(raw.get("hash", "")),
        size=_int(raw.get("size")),
        missing=tuple(missing),
        launches=tuple(
            _json_launches([(rank, _mapping(r.get("collective_counts"))) for rank, r in parsed])
        ),
        errors=tuple(_json_errors([(rank, _mapping(r.get("status"))) for rank, r in parsed])),
    )


def parse_json(text: str) -> RasReport | None:
    """The report `ncclras -f json` printed, or None when it is not that JSON."""
    start = text.find("{")
    try:
        raw = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("communicators"), list):
        return None
    comms = [_json_communicator(c) for c in raw["communicators"] if isinstance(c, dict)]
    processes: dict[tuple[str | None, int | None], RasRank] = {}
    for comm in comms:
        for rank in comm.missing:
            processes.setdefault((rank.host, rank.pid), rank.model_copy(update={"rank": None}))
    dead = tuple(p for p in processes.values() if p.dead)
    unresponsive = tuple(p for p in processes.values() if not p.dead)
    return RasReport(
        format="json",
        nccl_version=_text(raw.get("nccl_version")),
        unresponsive=unresponsive,
        unresponsive_count=len(unresponsive),
        dead=dead,
        dead_count=len(dead),
        timeouts=_count(_mapping(raw.get("ras")).get("timeouts_count"), 0),
        communicators=tuple(c for c in comms if c.missing or c.launches or c.errors),
        text=clip(text),
    )


def parse(text: str) -> RasReport:
    """The report, in whichever of the two formats it is."""
    if text.lstrip().startswith("{"):
        report = parse_json(text)
        if report is not None:
            return report
    return parse_text(text)
