"""HD250 data.worker_killed: /dev/shm filled up: DataLoader workers pass tensors through shared
memory, and when it is full they fail to write (ENOSPC) or die of SIGBUS."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogRule
from hangdoctor.rules.base import Deferral
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.log_helpers import cite, matches_of
from hangdoctor.taxonomy import Category


def _worker_killed_by_sigbus(job: JobView) -> bool:
    """Whether the log names a DataLoader worker killed by a bus error."""
    return any(
        (m.detail or "").strip() == "Bus error" for m in matches_of(job, LogKind.WORKER_KILLED)
    )


class SharedMemoryExhausted(LogRule):
    """shared memory (/dev/shm) exhausted

    Fires when: `/dev/shm` ran out (`unable to write to file </torch_...>`, the DataLoader's
    bus-error message, `Bus error (core dumped)`)

    Why: DataLoader workers hand batches to the training process through shared memory (`/dev/shm`).
    When it fills up, workers fail to write their tensors (ENOSPC) or die of SIGBUS, and the
    training loop fails or waits. Docker gives containers only 64 MB of `/dev/shm` by default.

    Instead: Give the job more shared memory (`docker run --shm-size=16g` or `--ipc=host`; in
    Kubernetes an `emptyDir` with `medium: Memory` at `/dev/shm`), or use less: fewer workers, a
    smaller `prefetch_factor` or batch, or
    `torch.multiprocessing.set_sharing_strategy("file_system")`.
    """

    id = "HD250"
    category = Category.DATA_WORKER_KILLED
    specificity = 80
    defers_to = (
        Deferral(
            frozenset({"HD202"}),
            why="HD202 names the worker the bus error killed, and gives the same advice",
            when=_worker_killed_by_sigbus,
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = matches_of(job, LogKind.SHM_EXHAUSTED, LogKind.BUS_ERROR)
        shm = [m for m in found if m.kind == LogKind.SHM_EXHAUSTED]
        bus = [m for m in found if m.kind == LogKind.BUS_ERROR]
        if not shm and not bus:
            return
        yield self.finding(
            confidence=Confidence.CERTAIN if shm else Confidence.PLAUSIBLE,
            title=_("Shared memory (/dev/shm) ran out")
            if shm
            else _("A process died of SIGBUS (Bus error): most likely /dev/shm is full"),
            explanation=_(
                "DataLoader workers hand batches to the training process through "
                "shared memory (/dev/shm). It filled up, so workers could not write "
                "their tensors and died of SIGBUS. Docker gives containers only 64 MB of "
                "/dev/shm by default."
            )
            if bus or any("bus error" in m.line.lower() for m in shm)
            else _(
                "DataLoader workers hand batches to the training process through "
                "shared memory (/dev/shm). It filled up, so workers could not write "
                "their tensors. Docker gives containers only 64 MB of /dev/shm by default."
            ),
            evidence=tuple(cite([*shm, *bus])),
            fixes=(
                _(
                    "Check `df -h /dev/shm`, then give the job more: `docker run --shm-size=16g` "
                    "(or `--ipc=host`); Kubernetes: mount an emptyDir with medium: Memory at "
                    "/dev/shm."
                ),
                _(
                    "Or use less: fewer DataLoader workers, smaller prefetch_factor or batches, or "
                    "`torch.multiprocessing.set_sharing_strategy('file_system')`."
                ),
            ),
        )
