"""The Flight Recorder of report.html: per process group, one row per rank and one column per
collective number, so that the column where the ranks' n-th calls differ (another operation,
or a call some ranks never made) stands out: that is where they fell out of step."""

from __future__ import annotations

from dataclasses import dataclass

from hangdoctor.evidence.model import Bundle, CollectiveRecord

#: Columns shown at most per group: the last ones, and always the first disagreement.
MAX_COLUMNS = 12


@dataclass(frozen=True)
class Cell:
    """One rank's call of one number: its operation, sizes, and whether it is still pending."""

    op: str | None
    sizes: str | None = None
    pending: bool = False


@dataclass(frozen=True)
class FlightRow:
    rank: int
    pid: int
    cells: list[Cell]
    last_enqueued: int | None
    last_completed: int | None


@dataclass(frozen=True)
class FlightTable:
    """One process group: its collective numbers (columns), which disagree, and the ranks."""

    group: str
    seqs: list[int]
    disagree: set[int]
    rows: list[FlightRow]
    first_disagreement: int | None
    hidden_before: int  # numbers left out on the left (only the last MAX_COLUMNS are shown)


def _disagreeing(seq: int, calls: dict[int, dict[int, CollectiveRecord]]) -> bool:
    """Whether the ranks' calls numbered `seq` differ: other operations, or a rank that has
    gone past `seq` (its ring holds a later one and an earlier one) without this call."""
    ops = {entries[seq].op for entries in calls.values() if seq in entries}
    if len(ops) > 1:
        return True
    for entries in calls.values():
        if seq not in entries and entries and min(entries) < seq < max(entries):
            return True
    # A rank whose newest call is older than `seq` never made it: others wait for it there.
    return any(entries and max(entries) < seq for entries in calls.values())


def build_flight_tables(bundle: Bundle | None) -> list[FlightTable]:
    """One table per process group of the ranks' Flight Recorder rings."""
    if bundle is None:
        return []
    by_rank = {
        r.rank: r
        for r in sorted(bundle.flight_records, key=lambda r: r.rank or 0)
        if r.rank is not None and r.entries
    }
    groups: dict[str, dict[int, dict[int, CollectiveRecord]]] = {}
    for rank, record in by_rank.items():
        for entry in record.entries:
            group = entry.process_group or "default"
            groups.setdefault(group, {}).setdefault(rank, {})[entry.seq] = entry
    tables = []
    for group, calls in groups.items():
        everyone = {r: calls.get(r, {}) for r in by_rank}
        seqs = sorted({seq for entries in everyone.values() for seq in entries})
        disagree = {seq for seq in seqs if _disagreeing(seq, everyone)}
        first = min(disagree) if disagree else None
        shown = seqs[-MAX_COLUMNS:]
        if first is not None and first not in shown:
            shown = [first, *seqs[seqs.index(first) + 1 :]][:MAX_COLUMNS]
        rows = []
        for rank, record in by_rank.items():
            entries = everyone[rank]
            cells = [
                Cell(
                    op=entries[seq].op,
                    sizes=entries[seq].sizes,
                    pending=entries[seq].retired is False,
                )
                if seq in entries
                else Cell(op=None)
                for seq in shown
            ]
            rows.append(
                FlightRow(rank, record.pid, cells, record.last_enqueued, record.last_completed)
            )
        tables.append(
            FlightTable(
                group=group,
                seqs=shown,
                disagree=disagree & set(shown),
                rows=rows,
                first_disagreement=first,
                hidden_before=seqs.index(shown[0]) if shown else 0,
            )
        )
    return tables
