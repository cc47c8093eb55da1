"""HD316 distributed.rendezvous: the launcher itself (torchrun's agent) waits in its rendezvous
for the other nodes of a multi-node job, so no rank has started: a node was never launched, or
it cannot reach the rendezvous endpoint."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import python_frames
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.roles import Role
from hangdoctor.evidence.model import ProcessEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import culprit, kernel_words, main_thread
from hangdoctor.taxonomy import Category

_RENDEZVOUS = "/torch/distributed/elastic/rendezvous/"
_OPTIONS = (
    "--nnodes",
    "--node-rank",
    "--node_rank",
    "--rdzv-endpoint",
    "--rdzv_endpoint",
    "--rdzv-backend",
    "--rdzv_backend",
    "--master-addr",
    "--master_addr",
    "--master-port",
    "--master_port",
)


def _agent_waiting(process: ProcessEvidence) -> bool:
    thread = main_thread(process)
    frames = python_frames(thread.python.frames) if thread and thread.python else []
    return any(
        _RENDEZVOUS in f.file.replace("\\", "/")
        and f.function.split(".")[-1] in ("next_rendezvous", "_rendezvous")
        for f in frames
    )


def _options(cmdline: tuple[str, ...]) -> list[str]:
    shown = []
    for index, word in enumerate(cmdline):
        name, equals, _value = word.partition("=")
        if name in _OPTIONS:
            shown.append(word if equals else " ".join(cmdline[index : index + 2]))
    return shown


class LauncherRendezvous(Rule):
    """the launcher waits for other nodes to join before starting any rank

    Fires when: torchrun's agent waits in its rendezvous (`next_rendezvous`) and no rank has
    started: the other nodes of `--nnodes` never joined; names the launcher's options

    Why: A multi-node launcher (torchrun's agent) starts its ranks only once every node's launcher
    has joined the rendezvous. When a node was not launched, was launched with other options, or
    cannot reach the rendezvous endpoint, no rank starts anywhere and the launchers wait until the
    rendezvous timeout.

    Instead: Start torchrun on every node with the same `--nnodes`, `--rdzv-endpoint` (or
    `--master-addr`/`--master-port`) and `--rdzv-id`, each with its own `--node-rank`; check that
    the endpoint is reachable from each node (`nc -zv HOST PORT`); use `--standalone` for a single
    machine.
    """

    id = "HD316"
    category = Category.DISTRIBUTED_RENDEZVOUS
    reads = "capture"
    specificity = 85

    def check(self, job: JobView) -> Iterable[Finding]:
        if any(job.role(p.pid) is Role.RANK for p in job.processes):
            return
        for process in job.processes:
            thread = main_thread(process)
            if thread is None or not _agent_waiting(process):
                continue
            options = _options(process.cmdline)
            yield self.finding(
                confidence=Confidence.STRONG,
                title=_(
                    "torchrun waits for the other nodes to join its rendezvous; no rank has started"
                ),
                explanation=_(
                    "A multi-node launcher starts its ranks only once every node's "
                    "launcher has joined the rendezvous. This one is still waiting: "
                    "another node was not launched, was launched with other options, "
                    "or cannot reach the rendezvous endpoint."
                ),
                culprit=culprit(job, process, thread),
                evidence=(
                    _(
                        "{process} waits in its rendezvous ({kernel})",
                        process=job.describe_process(process.pid),
                        kernel=kernel_words(thread),
                    ),
                    _("launcher options: {options}", options=" ".join(options))
                    if options
                    else _("launcher options: none given"),
                    _("no rank process exists yet"),
                ),
                fixes=(
                    _(
                        "Start torchrun on every node with the same --nnodes, --rdzv-endpoint "
                        "(or --master-addr/--master-port) and --rdzv-id, each with its own "
                        "--node-rank."
                    ),
                    _(
                        "From each node, check that the endpoint is reachable (`nc -zv HOST "
                        "PORT`) and that no firewall blocks it."
                    ),
                    _("For a single machine, use --standalone (or --nnodes 1)."),
                ),
            )
