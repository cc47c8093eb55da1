"""A hang of a job on several nodes: this node's capture goes to the others, theirs come back,
and the whole job is diagnosed as one (`nodes`)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from hangdoctor.evidence.model import Bundle
from hangdoctor.i18n import _n
from hangdoctor.nodes.session import NodeSession
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.report.directory import write_report_dir
from hangdoctor.report.model import Report
from hangdoctor.supervise.say import say


def whole_job(
    session: NodeSession,
    epoch: int,
    bundle: Bundle,
    report: Report,
    directory: Path,
    ending_job: bool,
) -> tuple[Bundle, Report]:
    """Send this node's capture to the other nodes, take theirs, and diagnose the whole job;
    this node's own report goes to `this-node/` beside the job's. `ending_job`: `--on-hang
    kill`, the nodes end their jobs once the hang is captured."""
    with contextlib.suppress(OSError):
        write_report_dir(directory / "this-node", report, bundle)
    merged = session.whole_job(epoch, bundle)
    if merged.nodes is not None:
        nodes = merged.nodes.model_copy(update={"this_node": session.plan.me})
        merged = merged.model_copy(update={"nodes": nodes})
        got = nodes.answered
        say(
            _n(
                "the whole job: evidence of {count} node of {nodes}",
                "the whole job: evidence of {count} nodes of {nodes}",
                got,
                nodes=nodes.count,
            )
        )
    if ending_job:
        session.finish(epoch)
    return merged, diagnose(merged, Context(mode=Mode.HANG, hang=report.hang))
