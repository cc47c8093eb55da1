"""Which group of ranks to blame when they wait in different places: the odd group (the ranks
that ran out of data first, the smaller group, the one under an `if` on the rank), and whether
the odd ranks left the loop the others still run their collective in. Pure functions of the
ranks' captured stacks; the cross-rank rules turn them into findings."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hangdoctor.analysis.frames import Origin, origin
from hangdoctor.analysis.rank_runs import RankStates
from hangdoctor.analysis.ranks import RankState, RankView
from hangdoctor.evidence.model import Frame, ThreadEvidence


def _each(states: Sequence[RankState]) -> Sequence[RankState]:
    """Each state once: a class's ranks (`rank_runs`) differ in nothing a group is judged by."""
    return states.distinct() if isinstance(states, RankStates) else states


def odd_group(groups: Sequence[Sequence[RankState]]) -> Sequence[RankState]:
    """The group to blame: the one whose ranks ran out of data first; else the smallest; among
    equals, the one whose call sits under an `if`, then the one whose own code asked for its
    collective most directly (a `barrier()` in a callback, rather than the gradient all-reduce
    every rank runs inside backward(), or a framework's per-step broadcast)."""
    ran_out = max(groups, key=lambda g: min(s.ran_out_of_data for s in _each(g)))
    if all(
        min(s.ran_out_of_data for s in _each(ran_out)) > max(s.ran_out_of_data for s in _each(g))
        for g in groups
        if g is not ran_out
    ):
        return ran_out
    candidates = sorted([*groups[1:], *groups[:1]], key=len)
    smallest = [g for g in candidates if len(g) == len(candidates[0])]
    guarded = [g for g in smallest if rank_guard(g[0]) is not None]
    if len(guarded) == 1 or (guarded and len(guarded) < len(smallest)):
        return guarded[0]
    if not guarded:
        # A group that took a branch the others did not (`if step % eval_every == 0:` around
        # the call into its collective, where the others' same function runs no such `if`).
        branched = [
            g for g in smallest if extra_guards(g[0], [o[0] for o in smallest if o is not g])
        ]
        if len(branched) == 1:
            return branched[0]
    unguarded_sites = [g for g in smallest if g[0].site is not None and g[0].site.guards]
    if guarded or unguarded_sites:
        return (guarded or unguarded_sites)[0]
    return min(smallest, key=lambda g: (g[0].distance is None, g[0].distance or 0))


def extra_guards(state: RankState, others: list[RankState]) -> set[str]:
    """Conditions of `if` blocks around the rank's user code, in functions the others also
    run, that the others' code there is not under: the branch this rank took and they did
    not."""
    theirs: dict[tuple[str, str], set[str]] = {}
    for other in others:
        for frame in user_frames(other.thread):
            theirs.setdefault((frame.file, frame.function), set()).update(frame.guards)
    found: set[str] = set()
    for frame in user_frames(state.thread):
        key = (frame.file, frame.function)
        if key in theirs:
            found |= set(frame.guards) - theirs[key]
    return found


# A condition on the rank: the code under it runs on some ranks only.
_RANK_WORDS = re.compile(
    r"\brank\b|local_rank|global_rank|get_rank\(|is_global_zero|"
    r"is_main_process|is_local_main_process|is_master|main_process|"
    r"\bis_main\b|"
    r"process_index|is_world_process_zero|is_local_process_zero",
    re.IGNORECASE,
)


def on_rank(condition: str) -> bool:
    """Whether the condition reads the rank (`if rank == 0:`, `if trainer.is_global_zero:`)."""
    return bool(_RANK_WORDS.search(condition))


def condition_of(frame: Frame) -> str | None:
    """The condition of the `if` around the frame's line that says why only some ranks get
    there: the innermost one on the rank, else the innermost one."""
    on_rank = next((g for g in reversed(frame.guards) if _RANK_WORDS.search(g)), None)
    return on_rank or (frame.guards[-1] if frame.guards else None)


def rank_guard(state: RankState) -> tuple[Frame, str] | None:
    """The innermost `if` on the rank that the rank's user code runs under (in its own line's
    function or in a caller: `if rank == 0: validate(model)`), if any."""
    for frame in user_frames(state.thread):
        for guard in reversed(frame.guards):
            if _RANK_WORDS.search(guard):
                return frame, guard
    return None


def split_groups(view: RankView) -> tuple[Sequence[RankState], Sequence[RankState]] | None:
    """The ranks waiting in collectives split into the odd group and the rest, when they wait
    in more than one place (groups of a class's ranks as runs: `rank_runs`)."""
    waiting = view.alive.where(lambda s: s.in_collective)
    if len(waiting) < 2:
        return None
    groups = view.groups(waiting)
    if len(groups) < 2:
        return None
    odd = odd_group(groups)
    rest = RankStates(run for g in groups if g is not odd for run in g.runs)
    return odd, rest


def user_frames(thread: ThreadEvidence | None) -> list[Frame]:
    return (
        [f for f in thread.python.frames if origin(f) is Origin.USER]
        if (thread is not None and thread.python is not None)
        else []
    )


def left_loop(odd: Sequence[RankState], rest: Sequence[RankState]) -> str | None:
    """The header of the loop the others still run their collective in and the odd ranks have
    left, or None when they have not left it.

    Step counts cannot tell: ranks blocked at different points of one iteration differ by a
    step too. The code can: the others' collective sits inside a loop, and the odd rank's stack
    is outside that loop (or out of that function altogether). The loops are compared in the
    innermost function of the user's code that both stacks run in. When both are inside the
    same loops there, the others are deeper, in a function called from that loop: the odd rank
    has returned from it (an epoch helper whose data ran out), unless the odd rank's collective
    runs under an `if` of its own that the others did not take (a barrier only rank 0 calls,
    beside a gradient-averaging helper that all_reduces in a loop over the parameters), or the
    others called that function under an `if` the odd rank did not take (an evaluation that
    only rank 0's schedule triggered)."""
    looping = rest[0].site
    thread = odd[0].thread
    if looping is None or not looping.loops or thread is None or thread.python is None:
        return None
    odd_frames = user_frames(thread)
    rest_frames = user_frames(rest[0].thread) or [looping]
    for index, frame in enumerate(rest_frames):  # innermost first
        for depth, mine in enumerate(odd_frames):
            if mine.file != frame.file or mine.function != frame.function:
                continue
            if len(mine.loops) != len(frame.loops) or index == 0:
                shorter = len(mine.loops) < len(frame.loops)
                if shorter and not mine.loops and mine.line < (frame.loop_lines or [0])[0]:
                    return None  # in no loop here, above the others': it has not reached it
                return frame.loops[len(mine.loops)] if shorter else None
            own_guards = {g for f in odd_frames[:depth] for g in f.guards}
            own_guards |= set(mine.guards) - set(frame.guards)
            # The others called into the deeper function under an `if` the odd rank's line is
            # not under: it did not take that branch, rather than return from it.
            their_guards = set(frame.guards) - set(mine.guards)
            if own_guards or their_guards:
                return None
            deeper = [f for f in rest_frames[:index] if f.loops]
            return deeper[-1].loops[0] if deeper else looping.loops[-1]
    return looping.loops[-1]


def ran_out_first(odd: Sequence[RankState], rest: Sequence[RankState]) -> bool:
    """Whether the odd ranks' DataLoaders ran out of data more often than the others': they
    finished their epoch while the others are still in it (instrumentation)."""
    return min(s.ran_out_of_data for s in _each(odd)) > max(s.ran_out_of_data for s in _each(rest))


def is_uneven(odd: Sequence[RankState], rest: Sequence[RankState]) -> bool:
    """Whether the odd ranks have left the loop the others still run their collective in, or
    ran out of data before them, having had fewer batches: odd ranks that fetched as many
    batches as the others and still left the loop skipped a collective inside it (a `continue`
    before `backward()` on an error caught on one rank), a mismatch, not uneven inputs."""
    if as_many_batches(odd, rest):
        return False
    return ran_out_first(odd, rest) or left_loop(odd, rest) is not None


def as_many_batches(odd: Sequence[RankState], rest: Sequence[RankState]) -> bool:
    """Whether every odd rank fetched at least as many batches as any of the others (the
    instrumentation's count; unknown when a rank counted none)."""
    counts = [s.status.batches if s.status is not None else 0 for s in _each(odd)]
    others = [s.status.batches if s.status is not None else 0 for s in _each(rest)]
    if not counts or not others or min(counts + others) <= 0:
        return False
    return min(counts) >= max(others)


def finished_loops(state: RankState, rest: Sequence[RankState]) -> Frame | None:
    """The others' frame whose outermost loop `state`'s rank, in no collective, has run to its
    end, in the innermost function of the user's code both stacks run in; None when it is still
    inside one of the loops around the others' collective at any level of the stack (a rank-only
    checkpoint between epochs, whose epoch loop is in a caller, is a straggler's), has not
    reached them, or when a frame's source could not be read (its loops are then unknown).

    The others are inside the loops and this rank's line, in each function both run in, is past
    the outermost loop's header and in none of them: it ran all the iterations it had and went on
    (polling for a file the chief writes at the end, a final evaluation), while the others, with
    more, wait in the loop for it."""
    looping = rest[0].site
    if state.thread is None or looping is None:
        return None
    rest_frames = user_frames(rest[0].thread) or [looping]
    own = user_frames(state.thread)
    found = None
    for frame in rest_frames:  # innermost first
        mine = next((f for f in own if (f.file, f.function) == (frame.file, frame.function)), None)
        if mine is None or not frame.loops:
            continue
        if mine.code is None or frame.code is None or len(frame.loop_lines) != len(frame.loops):
            return None  # no source read: its loops are unknown
        if set(mine.loop_lines) & set(frame.loop_lines) or mine.line <= frame.loop_lines[0]:
            return None
        found = found or frame
    return found
