"""HD312 distributed.uneven_inputs: A rank ran out of data first: it finished its loop and waits in
a later collective while the others are still in the loop."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import process_group_timeout
from hangdoctor.analysis.frames import short_file, short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.rank_blame import (
    is_uneven,
    left_loop,
    ran_out_first,
    split_groups,
    user_frames,
)
from hangdoctor.analysis.ranks import RankState, rank_list, rank_view
from hangdoctor.i18n import _, _n
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._ranks import (
    describe_group,
    early_exit,
    rank_culprit,
)
from hangdoctor.rules.finding import Finding, Location
from hangdoctor.taxonomy import Category


def _way_out(rest: list[RankState], loop: str) -> tuple[Location, str] | None:
    """How the rank that finished early left the loop the others still run, when its data did
    not run out: the loop's `break` or `return` (a rank-local early-stopping decision). With
    one such exit, that line; with several, the loop's header."""
    frames = user_frames(rest[0].thread) if rest[0].thread is not None else []
    looping = next((f for f in frames if loop in f.loops), None)
    if looping is None or not looping.loop_exits:
        return None
    where, words, only = early_exit(looping, looping.loops.index(loop))
    if only:
        words = _("{exit}: it decided to stop on its own, the others did not", exit=words)
    return where, words


def _loop_header(rest: list[RankState], loop: str) -> Location | None:
    """Where the loop that the others are still in begins, in their code: the place to show
    for a rank that has left the user's code altogether (it waits in the framework's exit)."""
    site = rest[0].site
    if site is None or loop not in site.loops or len(site.loop_lines) != len(site.loops):
        return None
    line = site.loop_lines[site.loops.index(loop)]
    return Location(file=site.file, line=line, function=site.function, code=loop)


class UnevenInputs(Rule):
    """ranks ran different numbers of steps

    Fires when: a rank left the training loop (its stack is past the loop the others' collective is
    in) and waits in a later collective

    Why: When ranks get different numbers of batches, the ones that finish first leave the training
    loop and wait in a collective after it, while the others wait in the loop's collective (DDP's
    gradient all-reduce): the two groups can never meet, and the job hangs at the end of an epoch.

    Instead: Give every rank the same number of synchronising steps: `DistributedSampler(...,
    drop_last=True)` or `DataLoader(drop_last=True)`; with dynamic batching, `all_reduce(MIN)` the
    batch count before the epoch; or wrap the loop in `torch.distributed.algorithms.Join`; make any
    early `break` a collective decision.
    """

    id = "HD312"
    category = Category.DISTRIBUTED_UNEVEN_INPUTS
    reads = "ranks"
    specificity = 88

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        split = split_groups(view)
        if split is None or not is_uneven(*split) or view.earlier_desync is not None:
            return  # none left early, or a rank's extra call shifted the others out of step
        odd, rest = list(split[0]), list(split[1])  # it fires: rank by rank from here
        state = odd[0]
        where = short_location(state.site) if state.site else _("its call site")
        loop = left_loop(odd, rest)
        way_out = _way_out(rest, loop) if loop and not ran_out_first(odd, rest) else None
        evidence = _evidence(odd, rest, loop, way_out)
        uneven_setting = next(
            (c for c in job.bundle.code_settings if c.name == "even_batches" and c.value == 0), None
        )
        culprit = rank_culprit(job, state)
        fixes: tuple[str, ...] = ()
        if uneven_setting is not None:
            at_setting = f"{short_file(uneven_setting.file)}:{uneven_setting.line}"
            evidence.append(_("the code sets even_batches=False at {where}", where=at_setting))
            fixes = (
                _(
                    "`even_batches=False` at {where} lets ranks get different numbers "
                    "of batches: keep accelerate's default (True, which pads the last batch), "
                    "or run the loop inside `with accelerator.join_uneven_inputs([model]):` "
                    "and gather once after it.",
                    where=at_setting,
                ),
            )
            location = Location(
                file=uneven_setting.file,
                line=uneven_setting.line,
                function=uneven_setting.function,
                code=uneven_setting.code,
            )
            culprit = culprit.model_copy(update={"location": location})
        elif way_out is not None:
            culprit = culprit.model_copy(update={"location": way_out[0]})
        elif loop is not None and not user_frames(state.thread):
            left = _loop_header(rest, loop)  # it left the user's code: the loop it left
            culprit = culprit.model_copy(update={"location": left}) if left else culprit
        yield self.finding(
            confidence=Confidence.CERTAIN,
            title=_n(
                "Uneven inputs: {odd} finished early and waits at {where}; {still}",
                "Uneven inputs: {odd} finished early and wait at {where}; {still}",
                len(odd),
                odd=rank_list(odd),
                where=where,
                still=_still_in_the_loop(rest),
            ),
            explanation=_(
                "Ranks got different numbers of batches. The ones that finished "
                "first wait in a collective after the loop, the others in the loop's "
                "collective: they can never meet."
            ),
            culprit=culprit,
            related=tuple(rank_culprit(job, s) for s in rest[:4]),
            evidence=tuple(evidence),
            fixes=(
                *fixes,
                *_fixes(left_by_a_break=way_out is not None),
                process_group_timeout(job),
            ),
        )


def _evidence(
    odd: list[RankState],
    rest: list[RankState],
    loop: str | None,
    way_out: tuple[Location, str] | None,
) -> list[str]:
    """The two groups, the loop one left, how it left, and the counts that differ."""
    state = odd[0]
    evidence = [describe_group(odd), describe_group(rest)]
    if loop:
        evidence.append(
            _n(
                "{rest} is still inside `{loop}`; {odd} already left it",
                "{rest} are still inside `{loop}`; {odd} already left it",
                len(rest),
                rest=rank_list(rest),
                loop=loop,
                odd=rank_list(odd),
            )
        )
    if way_out is not None:
        evidence.append(way_out[1])
    if ran_out_first(odd, rest):
        evidence.append(
            _(
                "{odd}'s DataLoader ran out of data {times} time(s), {rest}'s "
                "{rest_times}: {odd} finished the epoch first",
                odd=rank_list(odd),
                times=state.ran_out_of_data,
                rest=rank_list(rest),
                rest_times=rest[0].ran_out_of_data,
            )
        )
    if state.steps is not None and rest[0].steps is not None:
        evidence.append(
            _(
                "{odd} took {steps} steps, {rest} {rest_steps}",
                odd=rank_list(odd),
                steps=state.steps,
                rest=rank_list(rest),
                rest_steps=rest[0].steps,
            )
        )
    return evidence


def _still_in_the_loop(rest: list[RankState]) -> str:
    other = rest[0]
    if other.site is not None and other.doing:
        return _n(
            "{ranks} is still in its loop, in {doing} at {where}",
            "{ranks} are still in its loop, in {doing} at {where}",
            len(rest),
            ranks=rank_list(rest),
            doing=other.doing,
            where=short_location(other.site),
        )
    return _n(
        "{ranks} is still in its loop",
        "{ranks} are still in its loop",
        len(rest),
        ranks=rank_list(rest),
    )


def _fixes(*, left_by_a_break: bool) -> tuple[str, ...]:
    return (
        *(
            (
                _(
                    "Make the decision to leave the loop the same on every rank: "
                    "all_reduce the stop flag (or the value it is decided on) "
                    "before the `break`, so that every rank leaves at the same step."
                ),
            )
            if left_by_a_break
            else ()
        ),
        _(
            "Give every rank the same number of synchronising steps: with a fixed "
            "batch size, DistributedSampler(..., drop_last=True) or "
            "DataLoader(drop_last=True); with batches built by a budget (dynamic "
            "batching, bucketing) or gradient accumulation under `no_sync()`, the "
            "counts differ anyway: all_reduce(MIN) each rank's batch count before the "
            "epoch and stop every rank there."
        ),
        _(
            "Or wrap the training loop in torch.distributed.algorithms.Join (DDP "
            "supports it) so ranks that finish early shadow the others' collectives."
        ),
        _("Or all_reduce a 'has more data' flag every step and stop together."),
    )
