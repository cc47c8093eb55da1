"""Log rules for the input pipeline: DataLoader workers that ran out of shared memory (/dev/shm),
and a DataLoader that gave up waiting for a batch.

HD250 data.worker_killed (shared memory), HD251 data.pipeline_stall (DataLoader timeout).
"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.rules.logs.common import _cite, _found, _logs


# --- HD250 data.worker_killed (shared memory) ------------------------------------------------
class SharedMemoryExhausted(Rule):
    """/dev/shm filled up: DataLoader workers pass tensors through shared memory, and when it is
    full they fail to write (ENOSPC) or die of SIGBUS."""

    id = "HD250"
    category = "data.worker_killed"
    summary = "shared memory (/dev/shm) exhausted"
    specificity = 80
    names_culprit = False
    fires_on = (
        Example("no space for a shared tensor", lambda: _logs([
            "RuntimeError: unable to write to file </torch_8289_606636967_0>: No space left on "
            "device (28)",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm)."])),
        Example("a bus error with DataLoader workers", lambda: _logs([
            "epoch 0:  31%|###       | 310/1000 [02:11<04:52,  2.36it/s]",
            "Bus error (core dumped)"])),
    )
    quiet_on = (
        Example("a full data disk, not /dev/shm", lambda: _logs([
            "OSError: [Errno 28] No space left on device: '/ckpt/step_1000.pt'"])),
        Example("HD202 already explains the worker's SIGBUS", lambda: _logs([
            "ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm).",
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is "
            "possible that dataloader's workers are out of shared memory. Please try to raise "
            "your shared memory limit."])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "shm_exhausted", "bus_error", "worker_killed")
        if any(m.kind == "worker_killed" and (m.detail or "").strip() == "Bus error"
               for m in found):
            return  # HD202 names the worker and gives the same advice
        shm = [m for m in found if m.kind == "shm_exhausted"]
        bus = [m for m in found if m.kind == "bus_error"]
        if not shm and not bus:
            return
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR,
            confidence=0.9 if shm else 0.6,
            title="Shared memory (/dev/shm) ran out" if shm else
            "A process died of SIGBUS (Bus error): most likely /dev/shm is full",
            explanation=("DataLoader workers hand batches to the training process through "
                         "shared memory (/dev/shm). It filled up, so workers could not write "
                         "their tensors"
                         + (" and died of SIGBUS" if bus or any("bus error" in m.line.lower()
                                                              for m in shm) else "")
                         + ". Docker gives containers only 64 MB of /dev/shm by default."),
            evidence=tuple(_cite([*shm, *bus])),
            fixes=(
                "Check `df -h /dev/shm`, then give the job more: `docker run --shm-size=16g` "
                "(or `--ipc=host`); Kubernetes: mount an emptyDir with medium: Memory at "
                "/dev/shm.",
                "Or use less: fewer DataLoader workers, smaller prefetch_factor or batches, or "
                "`torch.multiprocessing.set_sharing_strategy('file_system')`.",
            ),
        )


# --- HD251 data.pipeline_stall (DataLoader timeout) ------------------------------------------
class DataLoaderTimeout(Rule):
    """DataLoader(timeout=N) expired: no batch arrived for N seconds, so a worker is stuck or
    too slow."""

    id = "HD251"
    category = "data.pipeline_stall"
    summary = "the DataLoader timed out waiting for a batch"
    specificity = 75
    names_culprit = False
    fires_on = (
        Example("DataLoader timed out", lambda: _logs([
            "  File \"/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py\", "
            "line 1150, in _get_data",
            "RuntimeError: DataLoader timed out after 120 seconds"])),
    )
    quiet_on = (
        Example("a slow but progressing loader", lambda: _logs([
            "step 10 data_time 2.1s", "step 11 data_time 2.3s"])),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        found = _found(job, "dataloader_timeout")
        if not found:
            return
        seconds = found[0].fields["seconds"]
        yield Finding(
            id=self.id, category=self.category, severity=Severity.ERROR, confidence=0.85,
            title=f"The DataLoader waited {seconds} s for a batch and gave up",
            explanation=("No DataLoader worker delivered a batch within the timeout: a worker "
                         "is blocked in the dataset (a network or storage read without a "
                         "timeout, a lock copied into it by fork, a deadlocked library) or is "
                         "far slower than the training step."),
            culprit=Culprit(rank=found[0].number("rank"), role="rank")
            if found[0].number("rank") is not None else None,
            evidence=tuple(_cite(found)),
            fixes=(
                "Capture the workers while they wait: `hangdoctor run -- python train.py` (or "
                "`hangdoctor dump PID`) shows the line each worker is blocked on.",
                "Reproduce in one process with num_workers=0 to see the blocking call in a "
                "plain traceback.",
                "Give network and storage reads in __getitem__ a timeout and a retry; raise "
                "DataLoader(timeout=...) only if batches are legitimately that slow.",
            ),
        )
