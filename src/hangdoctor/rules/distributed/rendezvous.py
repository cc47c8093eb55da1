"""HD314 distributed.rendezvous: The job waits at start-up for peers that never join."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import short_file
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.ranks import RankState, RankView, rank_list, rank_view
from hangdoctor.analysis.roles import init_method, rendezvous_address
from hangdoctor.analysis.waits import describe_wait
from hangdoctor.evidence.model import CodeSetting, ProcessEvidence
from hangdoctor.i18n import _, _n
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._ranks import rank_culprit
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.helpers import at
from hangdoctor.taxonomy import Category


def _size_setting(job: JobView, world_size: int | None) -> CodeSetting | None:
    """The setting in the code the ranks run that asks for more ranks than started here: a
    node count above one (`Trainer(num_nodes=2)`), or a literal world size equal to the one
    the ranks wait for."""
    for setting in job.bundle.code_settings:
        if setting.value is None or world_size is None:
            continue
        if (
            setting.name in ("num_nodes", "nnodes")
            and setting.value > 1
            and world_size % setting.value == 0
        ):
            return setting
        if setting.name == "world_size" and setting.value == world_size:
            return setting
    return None


def _place(setting: CodeSetting) -> str:
    return f"{short_file(setting.file)}:{setting.line}"


class Rendezvous(Rule):
    """ranks wait at start-up for peers that never join

    Fires when: ranks wait in `init_process_group`/the store while a peer never reached it

    Why: `init_process_group` waits until WORLD_SIZE ranks have joined through the store at
    MASTER_ADDR:MASTER_PORT. A node that never started, a world size that does not match what was
    launched, or an address the other nodes cannot reach leaves the ranks that did start waiting at
    start-up until the timeout (30 minutes by default).

    Instead: Launch every node with the same command, world size (`--nnodes`, `--nproc_per_node`)
    and endpoint, make MASTER_ADDR reachable from every node (not localhost; the right interface
    with `NCCL_SOCKET_IFNAME`/`GLOO_SOCKET_IFNAME`), and pass
    `init_process_group(timeout=timedelta(minutes=5))` so a missing peer fails fast.
    """

    id = "HD314"
    category = Category.DISTRIBUTED_RENDEZVOUS
    reads = "ranks"
    specificity = 85
    names_culprit = False  # a rank that never started has no process to point at

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        joining = view.alive.where(lambda s: s.in_start_up)
        if not joining or any((s.steps or 0) > 0 for s in view.all.distinct()):
            return
        late = view.alive.where(lambda s: not s.in_start_up)
        missing = [
            r
            for r in view.missing
            if r not in {s.rank for s in late} and r not in view.not_captured
        ]  # a rank left out may have joined
        setting_name, address = _store(joining[0].process)
        evidence = [
            _n(
                "{ranks} waits in {doing} at {where}",
                "{ranks} wait in {doing} at {where}",
                len(joining),
                ranks=rank_list(joining),
                doing=joining[0].call,
                where=at(joining[0].site),
            ),
            _(
                "{setting} is {address}, world size {world_size}",
                setting=setting_name,
                address=address,
                world_size=view.world_size,
            ),
        ]
        setting = None
        if late:
            culprit, title = _late(job, late[0], evidence)
        elif missing:
            culprit, title, setting = _missing(job, view, joining[0], missing, evidence)
        else:
            culprit = rank_culprit(job, joining[0])
            title = _(
                "Rendezvous: every rank waits at start-up for the store at {address}",
                address=address,
            )
        yield self.finding(
            confidence=Confidence.STRONG,
            title=title,
            explanation=_(
                "init_process_group waits until WORLD_SIZE ranks have joined through "
                "the store at MASTER_ADDR:MASTER_PORT; some never did."
            ),
            culprit=culprit,
            evidence=tuple(evidence),
            fixes=_fixes(setting, len(view.alive), address),
        )


def _store(process: ProcessEvidence | None) -> tuple[str, str]:
    """Which setting names the store the ranks rendezvous at, and its address."""
    env = process.environ if process else {}
    url = init_method(process) if process else None
    seen = rendezvous_address(process) if process else None
    address = (
        url
        if url and url != "env://"
        else (
            f"{env['MASTER_ADDR']}:{env.get('MASTER_PORT', '?')}"
            if "MASTER_ADDR" in env
            else seen or url or "?:?"
        )
    )
    return ("init_method" if url and url != "env://" else "MASTER_ADDR:MASTER_PORT"), address


def _late(job: JobView, state: RankState, evidence: list[str]) -> tuple[Culprit, str]:
    """A rank that runs but has not reached init_process_group: what it does instead."""
    wait = (
        describe_wait(job, state.process, state.thread)
        if state.process is not None and state.thread is not None
        else None
    )
    evidence.append(
        _(
            "rank {rank} has not reached init_process_group: it is {doing} at {where}",
            rank=state.rank,
            doing=wait.summary if wait else _("elsewhere"),
            where=at(state.site),
        )
    )
    title = _("Rendezvous: rank {rank} never reached init_process_group", rank=state.rank)
    return rank_culprit(job, state), title


def _missing(
    job: JobView, view: RankView, joining: RankState, missing: list[int], evidence: list[str]
) -> tuple[Culprit, str, CodeSetting | None]:
    """Ranks with no process here: on other nodes that never joined, or asked for by a setting
    in the code (then the culprit is that setting's line)."""
    names = ", ".join(map(str, missing[:8]))
    evidence.append(_("rank(s) {ranks} have no process here", ranks=names))
    setting = _size_setting(job, view.world_size)
    if view.on_this_node is not None and view.elsewhere:
        evidence.append(
            _(
                "this node runs ranks {first}-{last} of {world_size}: the others belong "
                "to other nodes, which never joined (not started, a wrong --node_rank or "
                "--nnodes, or the store unreachable from there)",
                first=view.on_this_node.start,
                last=view.on_this_node.stop - 1,
                world_size=view.world_size,
            )
        )
    culprit = rank_culprit(job, joining)  # where the job waits for them
    title = _("Rendezvous: rank(s) {ranks} never joined", ranks=names)
    if setting is None:
        return culprit, title, None
    sets = {"name": setting.name, "value": setting.value, "where": _place(setting)}
    evidence.append(
        _("the code sets {name}={value} at {where} `{code}`", code=setting.code, **sets)
        if setting.code
        else _("the code sets {name}={value} at {where}", **sets)
    )
    location = Location(
        file=setting.file, line=setting.line, function=setting.function, code=setting.code
    )
    title = _(
        "{title}: the world size of {world_size} comes from {name}={value} at {where}",
        title=title,
        world_size=view.world_size,
        **sets,
    )
    return culprit.model_copy(update={"location": location}), title, setting


def _fixes(setting: CodeSetting | None, started: int, address: str) -> tuple[str, ...]:
    asked = (
        _(
            "The code asks for {name}={value} at "
            "{where}, and {count} "
            "rank(s) started here: start the other node(s) with the same command "
            "and their node rank, or, for a run on this machine alone, set it to "
            "match what runs here.",
            name=setting.name,
            value=setting.value,
            where=_place(setting),
            count=started,
        )
        if setting is not None
        else None
    )
    return (
        *((asked,) if asked else ()),
        _(
            "Check that every node runs the same command with the same WORLD_SIZE / "
            "--nnodes and --nproc_per_node, and that all of them started."
        ),
        _(
            "Check that {address} is reachable from every node (firewall, the right "
            "interface: NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME).",
            address=address,
        ),
        _("Pass init_process_group(timeout=...) so a missing peer fails fast."),
    )
