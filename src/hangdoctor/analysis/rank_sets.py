"""A set of ranks written compactly, as engineers write them at scale (`0-6,8-15`): a list of
1,024 ranks is unreadable, its runs are not. Language-free: the words around it ("ranks") are
the caller's to translate."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def rank_spans(ranks: Iterable[int], limit: int | None = None) -> str:
    """`0-6,8-15` for ranks 0 to 15 but 7; with `limit`, at most that many runs, then `,…`
    (a set with many gaps stays one short line; the caller says how many ranks it holds)."""
    values = sorted(set(ranks))
    spans: list[str] = []
    index = 0
    while index < len(values):
        end = index
        while end + 1 < len(values) and values[end + 1] == values[end] + 1:
            end += 1
        first, last = values[index], values[end]
        spans.append(str(first) if first == last else f"{first}-{last}")
        index = end + 1
        if limit is not None and len(spans) >= limit and index < len(values):
            spans.append("…")
            break
    return ",".join(spans)


#: Ranks as inclusive runs: (0, 6), (8, 15).
Spans = tuple[tuple[int, int], ...]


def rank_ranges(ranks: Iterable[int]) -> Spans:
    """Ranks as inclusive runs: 0, 1, 2, 5 -> (0, 2), (5, 5)."""
    return union_ranges([(rank, rank) for rank in ranks])


def union_ranges(spans: Iterable[tuple[int, int]]) -> Spans:
    """Runs, overlapping or touching ones joined, in order."""
    out: list[list[int]] = []
    for low, high in sorted(spans):
        if out and low <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], high)
        else:
            out.append([low, high])
    return tuple((low, high) for low, high in out)


def spans_text(spans: Sequence[tuple[int, int]], limit: int = 6) -> str:
    """`0-43689,43691-131071`, as `rank_spans` writes them, at most `limit` runs then `,…`."""
    parts = [str(low) if low == high else f"{low}-{high}" for low, high in spans[:limit]]
    if len(spans) > limit:
        parts.append("…")
    return ",".join(parts)
