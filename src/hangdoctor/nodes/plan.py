"""Whether this `hangdoctor run` is one node of several, and how it meets the others: through
`--coordinator HOST:PORT` (a TCPStore that node 0's hangdoctor hosts, since the user asked for
it), else the job's own store (torchrun's rendezvous endpoint, MASTER_ADDR:MASTER_PORT; only
ever a client of it), else a directory under the report directory, which meets the others
when it is on a shared filesystem."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from hangdoctor.i18n import _
from hangdoctor.nodes.board import Board, DirectoryBoard, StoreBoard
from hangdoctor.nodes.identity import NodeIdentity, node_identity
from hangdoctor.nodes.session import SessionPlan


def _session_name(identity: NodeIdentity) -> str:
    """Keys of one job: its scheduler's job id; else one name, as the store is the job's own
    (a directory is the user's to keep apart from the last run's)."""
    return identity.job_id or "job"


def _elastic(command: Sequence[str], environ: Mapping[str, str]) -> bool:
    """An elastic node count (`--nnodes 1:4`): nodes beyond the fewest are not missing."""
    values = [environ.get("PET_NNODES", "")]
    for index, word in enumerate(command):
        if word.startswith("--nnodes="):
            values.append(word.partition("=")[2])
        elif word == "--nnodes" and index + 1 < len(command):
            values.append(command[index + 1])
    return any(":" in value for value in values)


def session_plan(
    command: Sequence[str],
    environ: Mapping[str, str],
    host: str,
    report_dir: Path,
    coordinator: tuple[str, int] | None = None,
) -> SessionPlan | None:
    """The plan for this node, or None for a job of one node (nothing to meet)."""
    identity = node_identity(command, environ, host)
    several = (identity.nnodes or 1) > 1 or coordinator is not None
    if not several:
        return None
    me = str(identity.node_rank) if identity.node_rank is not None else host
    expected = None if _elastic(command, environ) else identity.nnodes
    tasks = environ.get("SLURM_NTASKS", "")
    if tasks.isdigit() and int(tasks) > (identity.nnodes or 1) and environ.get("SLURM_LOCALID"):
        # Slurm runs one `hangdoctor run` per task, several on a node: each is a member.
        me = f"{me}.{environ['SLURM_LOCALID']}"
    session = _session_name(identity)
    if coordinator is not None:
        where, port = coordinator
        serve = identity.node_rank == 0

        def hosted() -> Board:
            if serve:
                try:
                    return StoreBoard(where, port, session, serve=True)
                except Exception:  # the port is taken: maybe it is the job's own store
                    pass
            return StoreBoard(where, port, session)

        return SessionPlan(
            me,
            host,
            expected,
            _("coordinator TCPStore {host}:{port}", host=where, port=port),
            hosted,
        )
    if identity.coordinator is not None:
        where, port = identity.coordinator
        return SessionPlan(
            me,
            host,
            expected,
            _("the job's TCPStore {host}:{port}", host=where, port=port),
            lambda: StoreBoard(where, port, session),
        )
    # Every node was given the same (shared) report directory: each writes its own report
    # in a folder of its own there, and they meet in `.nodes/`.
    shared = report_dir / ".nodes" / session
    return SessionPlan(
        me,
        host,
        expected,
        _("directory {path}", path=shared),
        lambda: DirectoryBoard(shared),
        report_dir=report_dir / f"node-{me}",
    )
