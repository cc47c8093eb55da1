"""HD355 distributed.rendezvous: NCCL refused to build its communicator because two ranks use
the same GPU (no `torch.cuda.set_device(local_rank)`), so the job dies at its first collective."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.analysis.tracebacks import first_raised
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import cite, output_lines
from hangdoctor.taxonomy import Category


class DuplicateGpu(LogKindsRule):
    """two ranks on one GPU: NCCL cannot build its communicator

    Fires when: NCCL's `Duplicate GPU detected : rank 1 and rank 0 both on CUDA device N` (or its
    `invalid usage` error at the first collective)

    Why: Each rank must drive its own GPU. Without `torch.cuda.set_device(local_rank)` every rank on
    a node uses GPU 0, and NCCL refuses to put two ranks of one communicator on the same device, so
    the job dies at its first collective (or, with some versions, hangs there).

    Instead: Call `torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))` before `init_process_group`
    (or pass `device_id=torch.device("cuda", local_rank)` to it), create the model and tensors on
    that device, and launch no more processes per node than visible GPUs.
    """

    id = "HD355"
    category = Category.DISTRIBUTED_RENDEZVOUS
    specificity = 90
    kinds = (LogKind.NCCL_DUPLICATE_GPU, LogKind.NCCL_INVALID_USAGE)

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        duplicate = [m for m in found if m.kind == LogKind.NCCL_DUPLICATE_GPU]
        invalid = [m for m in found if m.kind == LogKind.NCCL_INVALID_USAGE]
        first = (duplicate or invalid)[0]
        rank = first.number("rank")
        raised = first_raised(output_lines(job), rank) if rank is not None else None
        if duplicate:
            title = _(
                "Ranks {rank} and {other} both use CUDA "
                "device {device}: NCCL cannot build its communicator",
                rank=first.fields["rank"],
                other=first.fields["other"],
                device=first.fields["device"],
            )
        else:
            title = _("NCCL reported invalid usage at the first collective")
        yield self.finding(
            confidence=Confidence.CERTAIN if duplicate else Confidence.PLAUSIBLE,
            title=title,
            explanation=_(
                "Each rank must drive its own GPU. Without "
                "`torch.cuda.set_device(local_rank)` every rank on a node uses GPU 0 "
                "(the default), and NCCL refuses to put two ranks of one communicator on "
                "the same device, so the first collective fails."
            ),
            culprit=Culprit(
                rank=rank, role="rank", location=Location.of(raised.location if raised else None)
            )
            if rank is not None
            else None,
            evidence=tuple(cite(duplicate + invalid, limit=3)),
            fixes=(
                _(
                    "Call `torch.cuda.set_device(int(os.environ['LOCAL_RANK']))` before "
                    "`init_process_group` (or pass `device_id=torch.device('cuda', local_rank)` "
                    "to it), and create tensors and the model on that device."
                ),
                _(
                    "Check that --nproc_per_node is not larger than the GPUs the job can see "
                    "(CUDA_VISIBLE_DEVICES)."
                ),
            ),
        )
