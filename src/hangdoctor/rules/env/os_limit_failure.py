"""HD598 env.os_limits: The job failed of an operating-system limit (file size, open files,
processes). The fallback for a failed job whose exception names that mechanism (see
rules/_failure.py)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Bundle, ProgressStatus
from hangdoctor.rules._failure import check_failure, failed_with
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Finding
from hangdoctor.taxonomy import Category

SITE = "/usr/lib/python3.11/site-packages"


def _stream_error(*, limited: bool) -> Bundle:
    """torch.save's C++ writer fails with no errno; the script had capped the file size."""
    job = failed_with(
        "RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 13390400",
        ("/home/ml/train.py", 90, "main", "ckpt.save(epoch, model)"),
        ("/home/ml/train.py", 59, "save", "torch.save(state, path)"),
        (f"{SITE}/torch/serialization.py", 1002, "save", "with _open_zipfile_writer(f):"),
    )
    status = ProgressStatus(
        pid=1, updated_at=0.0, limits={"file_size": 16 << 20} if limited else {}
    )
    assert job.job is not None
    return job.model_copy(update={"job": job.job.model_copy(update={"progress": (status,)})})


class OsLimitFailure(Rule):
    id = "HD598"
    category = Category.ENV_OS_LIMITS
    summary = "the job failed of an operating-system limit (file size, open files, processes)"
    fires_when = (
        "the job failed of an exception an OS limit raises (`[Errno 27] File too large` at "
        "`ulimit -f`, `Too many open files`, `can't start new thread`) and no other rule found an "
        "error: names it and its line in your code"
    )
    why = (
        "The operating system limits what a process may use: the size of a file it writes (`ulimit "
        "-f`; Python ignores SIGXFSZ, so the write fails with `File too large`), its open files "
        "(`ulimit -n`), its processes and threads (`ulimit -u`). A limit set low by a container, a "
        "scheduler or the script itself fails the job at whatever line crosses it."
    )
    instead = (
        "Check the limits in the job's own environment (`ulimit -a`, `resource.getrlimit` in the "
        "script), raise the one the error names (`ulimit -n 65536`, Docker `--ulimit`, systemd "
        "`LimitNOFILE=`), or write, open or start less at the named line."
    )
    reads = "logs"
    fallback = True
    specificity = 5
    names_culprit = False
    fires_on = (
        Example(
            "a checkpoint larger than ulimit -f",
            lambda: failed_with(
                "OSError: [Errno 27] File too large",
                ("/home/ml/train.py", 50, "<module>", "save(model)"),
                ("/home/ml/train.py", 20, "save", "torch.save(model.state_dict(), path)"),
                (f"{SITE}/torch/serialization.py", 652, "save", "_save(obj, f)"),
            ),
        ),
        Example(
            "a checkpoint's stream write fails under a file-size limit the script set",
            lambda: _stream_error(limited=True),
        ),
    )
    quiet_on = (
        Example(
            "another failure",
            lambda: failed_with(
                "KeyError: 'lr'", ("/home/ml/train.py", 5, "<module>", "cfg['lr']")
            ),
        ),
        Example(
            "the same stream error with no file-size limit", lambda: _stream_error(limited=False)
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        return check_failure(job, self.id, self.category)
