"""`python -m hangdoctor.standalone.capture REQUEST`: the capture that `watch()`'s watchdog
starts at a hang, so that no heavy work runs inside the stuck process.

It first forks itself away from the job (the parent exits at once, the child carries on
reparented, in its own session): the job's tree is then the job alone, and the capture neither
appears in its own report nor dies with a job that ends meanwhile. It captures the tree and
diagnoses it through `supervise.hang_capture`, the very path `run` takes at a hang, writes
`hang-N/` (report.json, report.md, the evidence), prints the summary on stderr (the job's), and
answers the watchdog in a small JSON file. Bounded: it never outlives its work.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from hangdoctor.standalone.sidecar import command_line

LIMIT_S = 170  # seconds, all of it: more than the watchdog waits (watchdog.CAPTURE_LIMIT_S)


def _detach() -> bool:
    """Fork; True in the child that carries on (the parent, the watchdog's direct child,
    exits at once)."""
    if os.fork() != 0:
        os._exit(0)
    return True


def _answer(path: Path, body: dict[str, object]) -> None:
    from hangdoctor.private_files import write_text

    temporary = path.with_name(path.name + ".tmp")
    write_text(temporary, json.dumps(body))
    os.replace(temporary, path)


def capture(request: dict[str, object]) -> dict[str, object]:
    """Capture, diagnose and write the hang's report; returns the answer for the watchdog."""
    from rich.console import Console

    from hangdoctor import bounded
    from hangdoctor.evidence.model import JobRecord
    from hangdoctor.i18n import _
    from hangdoctor.probes.progress import (
        STOPPED_GLOB,
        read_fault_logs,
        read_statuses,
        read_thread_deaths,
        with_sync_source,
    )
    from hangdoctor.redact import redact_argv
    from hangdoctor.report.directory import write_report_dir
    from hangdoctor.report.render_terminal import render_terminal
    from hangdoctor.supervise.hang_capture import HangCapture, capture_hang
    from hangdoctor.supervise.policy import HangDecision

    pid = int(str(request["pid"]))
    status_dir = Path(str(request["status_dir"]))
    hang_dir = Path(str(request["hang_dir"]))
    fields = request["decision"]
    assert isinstance(fields, dict)
    decision = HangDecision(
        kind=str(fields["kind"]),
        last_progress_s=float(fields["last_progress_s"]),
        declared_s=float(fields["declared_s"]),
        threshold_s=float(fields["threshold_s"]),
        phase=fields.get("phase"),
        job_phase=fields.get("job_phase"),
    )
    started = float(str(request["started_wall"]))
    statuses = read_statuses(status_dir)
    record = JobRecord(
        command=redact_argv(command_line(pid)),
        started_at=started,
        hang_timeout_s=float(str(request["hang_timeout_s"])),
        last_progress_s=round(decision.last_progress_s, 3),
        progress=tuple(with_sync_source(s) for s in statuses),
        faults=tuple(read_fault_logs(status_dir)),
        stopped=tuple(read_fault_logs(status_dir, STOPPED_GLOB, when="sigterm")),
        thread_deaths=tuple(read_thread_deaths(status_dir)),
    )
    job = HangCapture(
        pid=pid,
        status_dir=status_dir,
        ranks=int(str(request.get("ranks") or 0)),
        started_wall=started,
        native_stacks=False,
    )
    captured, failure = bounded.call(
        "hang capture", lambda: capture_hang(job, decision, record), 120.0
    )
    if captured is None:
        reason = failure.message if failure is not None else "no result"
        sys.stderr.write("hangdoctor: " + _("capture failed: {reason}", reason=reason) + "\n")
        return {"written": False, "error": reason}
    bundle, report = captured
    report = write_report_dir(hang_dir, report, bundle)
    try:
        render_terminal(
            report, Console(stderr=True, highlight=False), str(hang_dir), max_findings=1
        )
    except Exception:  # the summary is a courtesy: the report is written
        sys.stderr.write("hangdoctor: " + _("report: {path}", path=hang_dir / "report.md") + "\n")
    root = report.root_cause
    location = root.culprit.location if root is not None and root.culprit is not None else None
    return {
        "written": True,
        "category": root.category if root is not None else None,
        "title": root.title if root is not None else None,
        "culprit": f"{location.file}:{location.line}" if location is not None else None,
    }


def main(argv: list[str]) -> int:
    from hangdoctor.i18n import _

    try:
        request = json.loads(argv[0]) if len(argv) == 1 else None
        answer = Path(str(request["answer"])) if isinstance(request, dict) else None
    except (ValueError, KeyError, TypeError):
        answer = None
    if answer is None or not isinstance(request, dict):
        sys.stderr.write(
            "hangdoctor: "
            + _("this is the capture that watch() starts at a hang; it takes one JSON request")
            + "\n"
        )
        return 2
    _detach()
    signal.alarm(LIMIT_S)  # the last bound: whatever stalls, the capture does not linger
    began = time.monotonic()
    try:
        body = capture(request)
    except Exception as error:
        if os.environ.get("HANGDOCTOR_DEBUG"):
            import traceback

            traceback.print_exc()
        body = {"written": False, "error": f"{type(error).__name__}: {error}"}
        sys.stderr.write(
            "hangdoctor: " + _("capture failed: {reason}", reason=body["error"]) + "\n"
        )
    body["seconds"] = round(time.monotonic() - began, 3)
    try:
        _answer(answer, body)
    except OSError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
