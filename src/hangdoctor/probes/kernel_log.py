"""The tail of the kernel log (Xid, OOM-killer, hung-task and I/O error lines live there).

Reading it may need privileges (kernel.dmesg_restrict): the error says how to allow it.
"""

from __future__ import annotations

import shutil
from datetime import datetime

from hangdoctor import bounded
from hangdoctor.evidence.model import ProbeError
from hangdoctor.i18n import N_, _
from hangdoctor.redact import redact_value

DMESG_HELP = N_("reading the kernel log needs CAP_SYSLOG or `sudo sysctl kernel.dmesg_restrict=0`")


def _since(lines: list[str], since: float | None) -> list[str]:
    """Lines stamped at or after `since` (Unix time); unstamped lines are kept."""
    if since is None:
        return lines
    kept = []
    for line in lines:
        stamp = line.split(" ", 1)[0]
        try:
            when = datetime.fromisoformat(stamp.replace(",", ".")).timestamp()
        except ValueError:
            kept.append(line)
            continue
        if when >= since:
            kept.append(line)
    return kept


def read_kernel_log(
    lines: int = 200, timeout_s: float = 3.0, since: float | None = None
) -> tuple[list[str], ProbeError | None]:
    """The last `lines` of the kernel log (only those since `since`, a Unix time, when given:
    an Xid from yesterday is not this job's), or why they could not be read."""
    dmesg = shutil.which("dmesg")
    if dmesg is None:
        return [], ProbeError(probe="kernel log", kind="missing_tool", message=_("dmesg not found"))
    done, error = bounded.run("kernel log", [dmesg, "--time-format", "iso", "--nopager"], timeout_s)
    if done is None:
        return [], error
    if done.returncode != 0:
        text = done.stderr.strip() or _("dmesg exited {code}", code=done.returncode)
        kind = "permission" if "ermission" in text or "not permitted" in text else "failed"
        return [], ProbeError(
            probe="kernel log",
            kind=kind,
            message=f"{text} ({_(DMESG_HELP)})" if kind == "permission" else text,
        )
    recent = _since(done.stdout.splitlines(), since)
    return [redact_value(line) for line in recent[-lines:]], None
