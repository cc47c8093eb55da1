"""HD598 env.os_limits: The job failed of an operating-system limit (file size, open files,
processes). The fallback for a failed job whose exception names that mechanism (see
rules/_failure.py)."""

from __future__ import annotations

from hangdoctor.rules._failure_rule import FailureRule
from hangdoctor.taxonomy import Category


class OsLimitFailure(FailureRule):
    """the job failed of an operating-system limit (file size, open files, processes)

    Fires when: the job failed of an exception an OS limit raises (`[Errno 27] File too large` at
    `ulimit -f`, `Too many open files`, `can't start new thread`) and no other rule found an error:
    names it and its line in your code

    Why: The operating system limits what a process may use: the size of a file it writes (`ulimit
    -f`; Python ignores SIGXFSZ, so the write fails with `File too large`), its open files (`ulimit
    -n`), its processes and threads (`ulimit -u`). A limit set low by a container, a scheduler or
    the script itself fails the job at whatever line crosses it.

    Instead: Check the limits in the job's own environment (`ulimit -a`, `resource.getrlimit` in the
    script), raise the one the error names (`ulimit -n 65536`, Docker `--ulimit`, systemd
    `LimitNOFILE=`), or write, open or start less at the named line.
    """

    id = "HD598"
    category = Category.ENV_OS_LIMITS
