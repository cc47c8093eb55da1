"""Run the self-tests in children with a hard time limit. A child that does not finish in time
has its stacks read (py-spy) to say where it hung, then its whole process tree is killed: the
doctor itself never hangs."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from hangdoctor.doctor.facts import SelftestResult
from hangdoctor.doctor.selftest_child import MARK
from hangdoctor.i18n import _
from hangdoctor.probes.pystacks import StackOptions, dump_stacks, find_py_spy

STACK_TIMEOUT_S = 5.0
MAX_STACK_PROCESSES = 4
_CHILD = [sys.executable, "-m", "hangdoctor.doctor.selftest_child"]


def _innermost(pid: int) -> tuple[list[str], str | None]:
    """Where each process of the tree rooted at `pid` waits: `file:line in function` of its
    main thread's innermost frame (or the first thread with frames)."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return [], _("the child exited before its stack could be read")
    where: list[str] = []
    error = None
    binary = find_py_spy()
    # The deepest processes (ranks under a launcher) usually hold the interesting stack.
    for process in list(reversed(tree))[:MAX_STACK_PROCESSES]:
        stacks, problem = dump_stacks(
            process.pid, binary, StackOptions(locals=False, timeout_s=STACK_TIMEOUT_S)
        )
        if problem is not None:
            error = problem.message
            continue
        thread = stacks.get(process.pid) or next((t for t in stacks.values() if t.frames), None)
        if thread is None or not thread.frames:
            continue
        frame = next((f for f in thread.frames if not f.native), thread.frames[0])
        prefix = f"pid {process.pid}: " if len(tree) > 1 else ""
        where.append(f"{prefix}{frame.file}:{frame.line} in {frame.function}")
    return where, (None if where else error)


def kill_tree(proc: subprocess.Popen[str]) -> None:
    """Kill `proc`, its descendants and its process group, and wait until they are gone: a
    killed process lingers until the scheduler runs it, longer on a loaded machine."""
    descendants: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        descendants = psutil.Process(proc.pid).children(recursive=True)
    for child in descendants:
        with contextlib.suppress(psutil.Error):
            child.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    psutil.wait_procs(descendants, timeout=5)


def _parse(stdout: str) -> dict[str, object]:
    """The values the child reported on its last `MARK` line ({} when there is none)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            with contextlib.suppress(ValueError):
                values = json.loads(line[len(MARK) :])
                if isinstance(values, dict):
                    return values
    return {}


def run_child(
    name: str, argv: Sequence[str], timeout_s: float, env: dict[str, str] | None = None
) -> SelftestResult:
    """Run one self-test program; passed, failed (with its last error line) or hung (with
    where it was stuck). Its process tree is gone when this returns."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    except OSError as error:
        return SelftestResult(
            name=name,
            status="failed",
            timeout_s=timeout_s,
            message=_("could not start: {error}", error=error),
        )
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        duration = time.monotonic() - started
        where, unreadable = _innermost(proc.pid)
        kill_tree(proc)
        with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
            proc.communicate(timeout=2)
        message = _("stack unavailable: {reason}", reason=unreadable) if unreadable else ""
        return SelftestResult(
            name=name,
            status="hung",
            duration_s=round(duration, 2),
            timeout_s=timeout_s,
            message=message,
            where=tuple(where),
        )
    finally:
        if proc.poll() is None:
            kill_tree(proc)
    duration = round(time.monotonic() - started, 2)
    details = {k: str(v) for k, v in _parse(stdout).items()}
    if proc.returncode != 0 or (not details and not name.startswith("script:")):
        last = [line for line in stderr.strip().splitlines() if line.strip()]
        reason = last[-1][:300] if last else _("exit status {code}", code=proc.returncode)
        if proc.returncode < 0:
            reason = _(
                "killed by {signal}; {reason}",
                signal=signal.Signals(-proc.returncode).name,
                reason=reason,
            )
        return SelftestResult(
            name=name,
            status="failed",
            duration_s=duration,
            timeout_s=timeout_s,
            message=reason,
            details=details,
        )
    return SelftestResult(
        name=name,
        status="passed",
        duration_s=duration,
        timeout_s=timeout_s,
        message=_summary(details),
        details=details,
    )


def _summary(details: dict[str, str]) -> str:
    if "step_s" in details:
        return _(
            "import {import_s} s, 3 steps {step_s} s",
            import_s=details["import_s"],
            step_s=details["step_s"],
        )
    if "world" in details:
        return _("{world} ranks ({backend})", world=details["world"], backend=details["backend"])
    return ""


def run_selftests(
    timeout_s: float = 60.0, script: Path | None = None
) -> tuple[SelftestResult, ...]:
    """CPU step and gloo all-reduce side by side; then each GPU alone and NCCL across all of
    them when torch sees GPUs; then the extra script, if one was given."""
    results: list[SelftestResult] = []
    if importlib.util.find_spec("torch") is None:
        results += [
            SelftestResult(name=n, status="skipped", message=_("torch not installed"))
            for n in ("cpu_step", "gloo_allreduce")
        ]
    else:
        with ThreadPoolExecutor(max_workers=2) as pool:
            cpu = pool.submit(run_child, "cpu_step", [*_CHILD, "step", "cpu"], timeout_s)
            gloo = pool.submit(
                run_child,
                "gloo_allreduce",
                [*_CHILD, "allreduce", "gloo", "2", str(timeout_s)],
                timeout_s,
            )
            results += [cpu.result(), gloo.result()]
        first = results[0]
        count = int(first.details.get("device_count", "0") or 0)
        if first.status == "passed" and first.details.get("cuda_available") == "True" and count:
            with ThreadPoolExecutor(max_workers=min(count, 8)) as pool:
                gpu = [
                    pool.submit(
                        run_child,
                        f"gpu_step:{i}",
                        [*_CHILD, "step", "cuda"],
                        timeout_s,
                        {"CUDA_VISIBLE_DEVICES": str(i)},
                    )
                    for i in range(count)
                ]
                results += [f.result() for f in gpu]
            results.append(
                run_child(
                    "nccl_allreduce",
                    [*_CHILD, "allreduce", "nccl", str(count), str(timeout_s)],
                    timeout_s,
                )
            )
        elif first.status == "passed":
            results.append(
                SelftestResult(name="gpu_step", status="skipped", message=_("torch sees no GPU"))
            )
    if script is not None:
        results.append(run_child(f"script:{script.name}", [sys.executable, str(script)], timeout_s))
    return tuple(results)
