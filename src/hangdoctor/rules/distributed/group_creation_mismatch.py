"""HD317 distributed.collective_mismatch: the ranks created process groups in different
numbers, and a rank now waits in the creation of the next one.

`torch.distributed.new_group` must be called by every rank of the job for every group, members
or not, in the same order (PyTorch's documentation of new_group says so): groups are told apart
by how many were created before them, so a group created on its members only leaves the ranks
counting differently, and the next creation waits for peers that registered it under another
name (https://github.com/pytorch/pytorch/issues/25390). The instrumentation counts each rank's
new_group calls and where they were made; the rank that made more names the extra one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from hangdoctor.analysis.frames import short_file
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.ranks import RankState, rank_list, rank_view
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._logs import capital
from hangdoctor.rules.distributed._ranks import rank_culprit
from hangdoctor.rules.finding import Finding, Location
from hangdoctor.rules.helpers import at
from hangdoctor.taxonomy import Category

_Site = tuple[str, int, str]  # file, line, function


def _creations(state: RankState) -> Counter[_Site]:
    status = state.status
    return Counter(
        (file, line, function)
        for _number, file, line, function in (status.group_sites if status else ())
    )


def _created(state: RankState, count: int) -> str:
    """`rank 1 called new_group 2 time(s), last at train.py:81`."""
    sites = state.status.group_sites if state.status else ()
    if not sites:
        return _("rank {rank} called new_group {count} time(s)", rank=state.rank, count=count)
    return _(
        "rank {rank} called new_group {count} time(s), last at {file}:{line}",
        rank=state.rank,
        count=count,
        file=short_file(sites[-1][1]),
        line=sites[-1][2],
    )


def _waits_creating(state: RankState) -> bool:
    return "new_group" in (state.call, state.api)


class GroupCreationMismatch(Rule):
    """ranks created process groups in different numbers (new_group on some ranks)

    Fires when: under `run`, a rank waits in `new_group` and the ranks' counts of new_group calls
    differ; names the call the ahead rank made and the others did not

    Why: `torch.distributed.new_group` must be called by every rank for every group, members or not,
    in the same order: groups are told apart by how many were created before them. A group created
    on its members only leaves the ranks counting differently, and the next group creation waits for
    peers that registered it under another name.

    Instead: Call `new_group` on every rank, also on those that are not members (create the group
    before the `if rank in ...:` and use it only inside), or create every group once, right after
    `init_process_group`; check with `TORCH_DISTRIBUTED_DEBUG=DETAIL`.
    """

    id = "HD317"
    category = Category.DISTRIBUTED_COLLECTIVE_MISMATCH
    reads = "ranks"
    specificity = 87

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        living = view.alive.where(lambda s: s.status is not None)
        if len(living) < 2 or not any(_waits_creating(s) for s in living.distinct()):
            return
        states = list(living)  # a rank creates a group: rank by rank from here
        counts = {s.rank: s.status.groups_created for s in states if s.status is not None}
        if len(set(counts.values())) < 2:
            return
        top = max(counts.values())
        ahead = [s for s in states if counts[s.rank] == top]
        behind = [s for s in states if counts[s.rank] < top]
        if any(s.call is None for s in behind):
            return  # a rank behind is still computing: it may yet get there (a straggler)
        state = ahead[0]
        extra = _creations(state) - _creations(behind[0])
        site = min(extra, key=lambda s: s[1]) if extra else None
        culprit = rank_culprit(job, state)
        if site is not None:
            culprit = culprit.model_copy(
                update={"location": Location(file=site[0], line=site[1], function=site[2])}
            )
        where = (
            _(
                "{file}:{line} in {function}",
                file=short_file(site[0]),
                line=site[1],
                function=site[2],
            )
            if site
            else _("an earlier call")
        )
        waiting = next((s for s in states if _waits_creating(s)), state)
        yield self.finding(
            confidence=Confidence.STRONG,
            title=_(
                "{ahead} created a process "
                "group at {where} that {behind} did not (new_group called "
                "{top} times against {fewest}); rank {rank} now "
                "waits in new_group at {waits_at}",
                ahead=capital(rank_list(ahead)),
                where=where,
                behind=rank_list(behind),
                top=top,
                fewest=min(counts.values()),
                rank=waiting.rank,
                waits_at=at(waiting.site),
            ),
            explanation=_(
                "Every rank must call new_group for every group, members or not, in the same "
                "order: groups are told apart by how many were created before them. A group "
                "created on its members only leaves the ranks counting differently, and the "
                "next creation waits for peers that registered it under another name."
            ),
            culprit=culprit,
            related=tuple(rank_culprit(job, s) for s in [*ahead[1:], *behind][:4]),
            evidence=(
                *(_created(s, counts[s.rank]) for s in states[:6]),
                *(
                    _(
                        "rank {rank} waits in {doing} at {where}",
                        rank=s.rank,
                        doing=s.doing,
                        where=at(s.site),
                    )
                    for s in states[:6]
                    if s.call is not None
                ),
            ),
            fixes=(
                _(
                    "Call new_group at {where} on every rank, also on those that are not "
                    "members (create the group before the `if rank in ...:` and use it only "
                    "inside), or create every group once, right after init_process_group.",
                    where=where,
                ),
                _("Check with TORCH_DISTRIBUTED_DEBUG=DETAIL on a small run."),
            ),
        )
