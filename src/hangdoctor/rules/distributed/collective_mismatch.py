"""HD311 distributed.collective_mismatch: Ranks wait in different collectives, or in one that only
some of them call."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import process_group_timeout
from hangdoctor.analysis.desync import DesyncOrigin
from hangdoctor.analysis.frames import short_file, short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.rank_blame import (
    as_many_batches,
    condition_of,
    extra_guards,
    is_uneven,
    left_loop,
    on_rank,
    rank_guard,
    split_groups,
)
from hangdoctor.analysis.ranks import RankState, RankView, rank_list, rank_view
from hangdoctor.evidence.model import CodeFinding, Frame
from hangdoctor.i18n import N_, _, _n
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._logs import capital
from hangdoctor.rules.distributed._ranks import describe_group, rank_culprit
from hangdoctor.rules.finding import Finding, Location
from hangdoctor.taxonomy import Category


def _calls(states: list[RankState], doing: str | None) -> str:
    """`rank 0 calls barrier`, `ranks 1-3 call all_reduce`."""
    return _n(
        "{ranks} calls {doing}",
        "{ranks} call {doing}",
        len(states),
        ranks=rank_list(states),
        doing=doing,
    )


_DEBUG_DETAIL = N_(
    "Check with TORCH_DISTRIBUTED_DEBUG=DETAIL on a small run "
    "(it checks that collectives match; it is slow, so not for production)."
)


def _guarded_in_code(job: JobView, states: list[RankState]) -> tuple[CodeFinding, RankState] | None:
    """A collective the code calls on some ranks only (`hangdoctor lint`'s HL101 in a file the
    ranks run), and the waiting rank that takes that branch: rank 0 for a rank-0 condition,
    else the lowest other rank."""
    for code in job.bundle.code_findings:
        if code.category != Category.DISTRIBUTED_COLLECTIVE_MISMATCH.value or code.ranks is None:
            continue
        takers = [s for s in states if (s.rank == 0) == (code.ranks == "main")]
        if takers:
            return code, min(takers, key=lambda s: s.rank)
    return None


POINT_TO_POINT = frozenset(
    {"send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list", "recv_object_list"}
)


def _apart_from(
    view: RankView, origin: DesyncOrigin
) -> tuple[list[RankState], list[RankState]] | None:
    """Ranks that all wait at the same line can still be out of step: the instrumentation saw
    one of them make an earlier collective the others did not. It stands apart from them."""
    odd = view.ranks.get(origin.rank)
    rest = [s for s in view.alive if s.rank != origin.rank]
    return ([odd], rest) if odd is not None and rest else None


class CollectiveMismatch(Rule):
    """ranks are in different collectives

    Fires when: ranks wait in different collectives, or in one only some of them call; names the
    call site and the `if` condition around it (`rank == 0`), and the sequence number where they
    diverged

    Why: Collectives pair up across ranks by order, not by name or line: each rank's n-th collective
    meets every other rank's n-th. A collective called only on some ranks (under `if rank == 0:`, a
    data-dependent branch) or a different one shifts every later pairing, so the ranks stop wherever
    the shifted calls can no longer match, often far from the line that made them part.

    Instead: Make every rank call the same collectives in the same order: move the call out of the
    rank condition (do only the rank-0 work inside it), decide data-dependent branches collectively
    (`all_reduce` the condition first), and check with `TORCH_DISTRIBUTED_DEBUG=DETAIL` on a small
    run.
    """

    id = "HD311"
    category = Category.DISTRIBUTED_COLLECTIVE_MISMATCH
    reads = "ranks"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        split = split_groups(view)
        origin = view.earlier_desync
        if split is None and origin is not None:
            split = _apart_from(view, origin)
        if split is None or (origin is None and is_uneven(*split)):
            return
        odd, rest = list(split[0]), list(split[1])  # it fires: rank by rank from here
        if origin is not None and origin.rank in view.ranks:
            yield self._from_origin(job, origin, (odd, rest))
            return
        state = odd[0]
        site = state.site
        where = short_location(site) if site else _("its call site")
        evidence = [describe_group(odd), describe_group(rest)]
        # The framework issued the collectives (every rank's own line is the same, or the call
        # is not the user's): the code may show the call made on some ranks only.
        code = None
        if state.distance is None or (site is not None and site == rest[0].site):
            found = _guarded_in_code(job, odd + rest)
            if found is not None:
                code, taker = found
                odd, rest = [taker], [s for s in odd + rest if s is not taker]
                state = taker
        evidence += _same_step(job, odd + rest)
        evidence += _skipped_inside(odd, rest)
        if code is not None:
            yield self._from_code(job, code, state, rest, evidence)
            return
        if all(s.call in POINT_TO_POINT for s in odd + rest):
            yield self._point_to_point(job, state, odd + rest, evidence)
            return
        where, first_fix = _why_only_some(state, odd, rest, where, evidence)
        yield self.finding(
            confidence=Confidence.CERTAIN,
            title=_(
                "Collective mismatch: {odd} in {doing} at {where}, {rest} in {other_doing}",
                odd=rank_list(odd),
                doing=state.doing,
                where=where,
                rest=rank_list(rest),
                other_doing=rest[0].doing,
            ),
            explanation=_(
                "Collectives pair up by order: when ranks call different ones (or one "
                "only some ranks call), each waits for a partner that never comes."
            ),
            culprit=rank_culprit(job, state),
            related=tuple(rank_culprit(job, s) for s in rest[:4]),
            evidence=tuple(evidence),
            fixes=(first_fix, _(_DEBUG_DETAIL), process_group_timeout(job)),
        )

    def _from_origin(
        self, job: JobView, origin: DesyncOrigin, split: tuple[list[RankState], list[RankState]]
    ) -> Finding:
        """The ranks fell out of step at an earlier call (one rank made a collective the others
        did not): that call is the culprit; where they stopped is the symptom."""
        state = rank_view(job).ranks[origin.rank]
        site = origin.site
        where = short_location(site) if site is not None else _("a line not recorded")
        guard = condition_of(site) if site is not None else None
        under = _(" (under `if {guard}`)", guard=guard) if guard else ""
        stuck = [describe_group(group) for group in split]
        what = (
            _("a collective the others did not make")
            if origin.extra
            else _("a different collective from the others'")
        )
        evidence = [
            _("instrumentation: {line}", line=origin.describe()),
            *([_("the call sits under `if {guard}`", guard=guard)] if guard else []),
            *stuck,
        ]
        divergence = rank_view(job).divergence
        if divergence is not None:
            evidence.append(
                _(
                    "Flight Recorder: the ranks' collectives first differ at #{seq}: {ops}",
                    seq=divergence.seq,
                    ops=", ".join(f"rank {r} {op}" for r, op in sorted(divergence.ops.items())),
                )
            )
        others = sorted(r for r in rank_view(job).ranks if r != origin.rank)
        if origin.extra and guard and not on_rank(guard) and len(others) == 1:
            # A condition on each rank's own data (`if len(self.labels) > 0:`), not on the
            # rank: the rank where it was false skipped a collective every rank makes.
            skipper = rank_view(job).ranks[others[0]]
            evidence.insert(
                1,
                _(
                    "rank {rank} skipped it: `{guard}` was false there "
                    "(it reads that rank's own data), true on rank {other}",
                    rank=skipper.rank,
                    guard=guard,
                    other=origin.rank,
                ),
            )
            return self._finding_for(
                job, origin, split, skipper, site, where, under, what, evidence, skipped=True
            )
        return self._finding_for(
            job, origin, split, state, site, where, under, what, evidence, skipped=False
        )

    def _finding_for(
        self,
        job: JobView,
        origin: DesyncOrigin,
        split: tuple[list[RankState], list[RankState]],
        state: RankState,
        site: Frame | None,
        where: str,
        under: str,
        what: str,
        evidence: list[str],
        *,
        skipped: bool,
    ) -> Finding:
        guard = condition_of(site) if site is not None else None
        culprit = rank_culprit(job, state)
        if site is not None:
            culprit = culprit.model_copy(update={"location": Location.of(site)})
        stuck = [s for group in split for s in group]
        now = (
            _("the ranks now wait at one line, out of step")
            if all(s.call == stuck[0].call and s.site == stuck[0].site for s in stuck)
            else _("the ranks now wait in different places")
        )
        related = tuple(rank_culprit(job, s) for g in split for s in g if s is not state)[:4]
        if skipped:
            return self.finding(
                confidence=Confidence.STRONG,
                title=_(
                    "Collective mismatch: rank {rank} skipped the {op} at "
                    "{where}{under} that rank {other} made (collective "
                    "#{seq}); every later collective was one apart, and {now}",
                    now=now,
                    rank=state.rank,
                    op=origin.op,
                    where=where,
                    under=under,
                    other=origin.rank,
                    seq=origin.seq,
                ),
                explanation=_(
                    "Collectives pair up by order. The call is made only where a condition on "
                    "the rank's own data holds, and on rank {rank} it did not (an empty "
                    "shard, a metric with nothing to compute): from there on each rank's n-th "
                    "collective met another's n-th that was a different call, and the ranks "
                    "stop later, far from the line that made them part.",
                    rank=state.rank,
                ),
                culprit=culprit,
                related=related,
                evidence=tuple(evidence),
                fixes=(*_skipped_fixes(origin, where, guard), process_group_timeout(job)),
            )
        return self.finding(
            confidence=Confidence.CERTAIN,
            title=_(
                "Collective mismatch: rank {rank} called {op} at {where}"
                "{under}, {what} (collective #{seq}); every later collective was "
                "one apart, and {now}",
                now=now,
                rank=origin.rank,
                op=origin.op,
                where=where,
                under=under,
                what=what,
                seq=origin.seq,
            ),
            explanation=_(
                "Collectives pair up by order. One rank made a collective the others "
                "did not (or a different one), so from there on each rank's n-th "
                "collective met another's n-th that was a different call: the ranks "
                "stop later, wherever the shifted calls can no longer pair up, far "
                "from the line that made them part."
            ),
            culprit=culprit,
            related=related,
            evidence=tuple(evidence),
            fixes=(
                _made_alone_fix(origin, where, under, guard),
                _(_DEBUG_DETAIL),
                process_group_timeout(job),
            ),
        )

    def _point_to_point(
        self, job: JobView, state: RankState, states: list[RankState], evidence: list[str]
    ) -> Finding:
        """send/recv pair up one to one between two ranks: a rank condition around them is how
        such code is written, not the fault; the counts differ."""
        where = short_location(state.site) if state.site else _("its call site")
        others = [s for s in states if s is not state]
        return self.finding(
            confidence=Confidence.STRONG,
            title=_n(
                "Point-to-point mismatch: rank {rank} waits in {call} at "
                "{where}, and {others} waits in {calls}: each waits for a "
                "message the other does not send",
                "Point-to-point mismatch: rank {rank} waits in {call} at "
                "{where}, and {others} wait in {calls}: each waits for a "
                "message the other does not send",
                len(others),
                rank=state.rank,
                call=state.call,
                where=where,
                others=rank_list(others),
                calls="/".join(sorted({s.call or "?" for s in others})),
            ),
            explanation=_(
                "Sends and receives pair up one to one, in order, between two ranks. "
                "When one side posts one more receive (or send) than the other, for "
                "example a short last batch that splits into fewer micro-batches on "
                "one stage than the other expects, that call waits for good, and "
                "the ranks that wait for it stop behind it."
            ),
            culprit=rank_culprit(job, state),
            related=tuple(rank_culprit(job, s) for s in others[:4]),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Count the sends and receives each pair of ranks makes per step (rank "
                    "{rank}'s {call} at {where}): both sides must derive the count "
                    "from the same value. Send the count first, or make every batch split the "
                    "same (drop_last=True, a fixed micro-batch count).",
                    rank=state.rank,
                    call=state.call,
                    where=where,
                ),
                _(
                    "Run a small case with a short process-group timeout and print each "
                    "send/recv with its peer and step on both ranks to see where they part."
                ),
                process_group_timeout(job),
            ),
        )

    def _from_code(
        self,
        job: JobView,
        code: CodeFinding,
        state: RankState,
        rest: list[RankState],
        evidence: list[str],
    ) -> Finding:
        where = _(
            "{file}:{line} in {function}",
            file=short_file(code.file),
            line=code.line,
            function=code.function,
        )
        found = {"rule": code.rule_id, "message": code.message, "where": where}
        evidence.append(
            _("code ({rule}): {message}, at {where} `{code}`", code=code.code, **found)
            if code.code
            else _("code ({rule}): {message}, at {where}", **found)
        )
        located = rank_culprit(job, state).model_copy(
            update={
                "location": Location(
                    file=code.file, line=code.line, function=code.function, code=code.code
                )
            }
        )
        return self.finding(
            confidence=Confidence.PROBABLE,
            title=_(
                "Collective mismatch: rank {rank} in {call}, {rest} "
                "in {other_call}; the code calls a collective on some ranks only at "
                "{where}",
                rank=state.rank,
                call=state.call,
                rest=rank_list(rest),
                other_call=rest[0].call,
                where=where,
            ),
            explanation=_(
                "Collectives pair up by order: when ranks call different ones (or one "
                "only some ranks call), each waits for a partner that never comes. "
                "The framework runs the collectives here, so the ranks' own lines are "
                "the same; the code shows which call only some ranks make."
            ),
            culprit=located,
            related=tuple(rank_culprit(job, s) for s in rest[:4]),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "{message} ({where}): move the call "
                    "out of that condition, so that every rank makes it (do only the rank-0 "
                    "work inside it).",
                    message=capital(code.message),
                    where=where,
                ),
                _(_DEBUG_DETAIL),
                process_group_timeout(job),
            ),
        )


def _same_step(job: JobView, states: list[RankState]) -> list[str]:
    """That the ranks are at the same step of their sequence, when they are."""
    seqs = {s.seq for s in states if s.seq is not None}
    if len(seqs) != 1:
        return []
    if rank_view(job).flight_recorder:
        return [
            _(
                "Flight Recorder: all of them are at collective #{seq}: the same "
                "step of the sequence, but not the same operation",
                seq=seqs.pop(),
            )
        ]
    return [
        _(
            "all of them are at collective #{seq}: the same "
            "step of the sequence, but not the same operation",
            seq=seqs.pop(),
        )
    ]


def _why_only_some(
    state: RankState, odd: list[RankState], rest: list[RankState], where: str, evidence: list[str]
) -> tuple[str, str]:
    """Why only some ranks made the call, as far as the code tells (a condition on the rank, a
    condition that may differ, a branch only they took), and the first fix; with the place to
    name (the guarded call, when that is not where the rank waits)."""
    site = state.site
    guarded = rank_guard(state)
    guard = (
        guarded[1] if guarded else (site.guards[-1] if site is not None and site.guards else None)
    )
    if guarded is not None and guarded[0] is not site:
        where = short_location(guarded[0])
    branch = sorted(extra_guards(state, rest)) if not guard else []
    if guarded is not None:
        evidence.append(
            _("the call at {where} runs only where `{guard}` holds", where=where, guard=guard)
        )
        return where, _(
            "The {doing} at {where} runs only where `{guard}` holds: move "
            "it out of that `if` block, so that every rank calls it.",
            doing=state.doing,
            where=where,
            guard=guard,
        )
    if guard:  # a condition that need not differ between ranks (`if group is None:`)
        evidence.append(_("the call at {where} sits under `if {guard}`", where=where, guard=guard))
        return where, _(
            "{odd_calls} at {where} (under `if {guard}`) while "
            "{rest_calls}: if `{guard}` can "
            "differ between ranks, make it the same on every rank; else look for "
            "a collective (or a group creation) that only some ranks made "
            "before this one.",
            odd_calls=capital(_calls(odd, state.doing)),
            where=where,
            guard=guard,
            rest_calls=_calls(rest, rest[0].doing),
        )
    if branch:
        evidence.append(
            _(
                "{odd} took the branch `if {branch}`, which {rest} did not",
                odd=rank_list(odd),
                branch=branch[0],
                rest=rank_list(rest),
            )
        )
        return where, _(
            "{odd} reached the "
            "{call} at {where} through `if {branch}`, which "
            "{rest} did not take: that condition differs between "
            "ranks (it reads something each rank has its own value of); make it "
            "the same on every rank, or all-reduce what it reads first.",
            odd=capital(rank_list(odd)),
            call=state.call,
            where=where,
            branch=branch[0],
            rest=rank_list(rest),
        )
    return where, _(
        "Every rank must call the same collectives in the same order: "
        "{odd_calls} at {where} while {rest_calls} at {other_where}.",
        odd_calls=_calls(odd, state.doing),
        where=where,
        rest_calls=_calls(rest, rest[0].doing),
        other_where=short_location(rest[0].site) if rest[0].site else _("another place"),
    )


def _skipped_fixes(origin: DesyncOrigin, where: str, guard: str | None) -> tuple[str, str]:
    """A call made only where a condition on the rank's own data held."""
    return (
        _(
            "Make every rank call the {op} at {where} whatever its data: "
            "compute the condition `{guard}` from all ranks first (all-reduce the "
            "count, then decide), or let the collective handle empty inputs "
            "(a metric's compute() must run on every rank).",
            op=origin.op,
            where=where,
            guard=guard,
        ),
        _(
            "Shard data so that every rank gets some of each kind (shuffle the "
            "evaluation sampler, or pad the smaller shards)."
        ),
    )


def _made_alone_fix(origin: DesyncOrigin, where: str, under: str, guard: str | None) -> str:
    """A call one rank made and the others did not."""
    fields = {"op": origin.op, "where": where, "under": under, "rank": origin.rank}
    if guard:
        return _(
            "Every rank must call the same collectives in the same order: the {op} "
            "at {where}{under} runs on rank {rank} and not on the others. "
            "Move it out of that `if` (call it on every rank, and keep only the rank-"
            "{rank} work inside), "
            "or, when only one rank needs the result, make every rank call it anyway "
            "(gathering a state dict, computing a metric: both are collectives).",
            **fields,
        )
    return _(
        "Every rank must call the same collectives in the same order: the {op} "
        "at {where}{under} runs on rank {rank} and not on the others. "
        "Call it on every rank, "
        "or, when only one rank needs the result, make every rank call it anyway "
        "(gathering a state dict, computing a metric: both are collectives).",
        **fields,
    )


def _skipped_inside(odd: list[RankState], rest: list[RankState]) -> list[str]:
    """Odd ranks that left the loop the others' collective is in after fetching as many batches
    as they did: one of their iterations skipped a collective (a `continue` before backward()
    after an error caught on that rank only)."""
    loop = left_loop(odd, rest)
    if loop is None or not as_many_batches(odd, rest) or odd[0].status is None:
        return []
    return [
        _(
            "{odd} fetched as many batches ({batches}) as {rest} and still left `{loop}`: an "
            "iteration of theirs skipped a collective (a `continue`, or an `if` around "
            "backward() or a collective, taken on some ranks only)",
            odd=rank_list(odd),
            batches=odd[0].status.batches,
            rest=rank_list(rest),
            loop=loop,
        )
    ]
