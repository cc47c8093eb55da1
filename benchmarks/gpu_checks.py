"""GPU truth: hangdoctor on jobs that hang on a real GPU, one check per row of issue 11's table,
plus what the instrumentation costs at ~1 ms steps. Each check has its own time limit and kills
everything it started; the whole run fits in ten minutes on a fresh GPU machine.

    python benchmarks/gpu_checks.py [--device auto|cuda|cpu] [--hang-timeout 10]
        [--only kernel_hang,nan_retry,...] [--out DIR]

Needs torch, hangdoctor importable (installed, or PYTHONPATH=src with its dependencies) and
py-spy on PATH; no network. On a machine without a GPU the checks whose mechanism exists on CPU
run there (`--device cpu`: DataLoader, NaN retry, distributed, doctor, overhead, compile,
collective errors) and the GPU-only ones are listed as not run. Prints the environment and a
Markdown table; writes it with every report into --out. Exit status 1 when a check that ran
came out wrong.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _runbench import (
    BenchError,
    Finished,
    hangdoctor_command,
    kill_tree,
    marked_env,
    new_mark,
    row,
    run_command,
    tail,
)

JOBS = Path(__file__).resolve().parent / "gpu_jobs"
PROBE = "_hangdoctor_"  # the prefix of every module of the probe


@dataclass
class Context:
    device: str  # cuda or cpu
    hang_timeout_s: float
    out: Path

    @property
    def gpu(self) -> bool:
        return self.device == "cuda"


@dataclass
class Outcome:
    got: str
    right: bool


@dataclass(frozen=True)
class Check:
    name: str
    situation: str
    expected: str
    gpu_only: bool
    run: Callable[[Context], Outcome]
    estimate_s: float  # on a GPU machine, to keep within the time budget


# ---- helpers ------------------------------------------------------------------------------------


def marker_line(job: str, label: str) -> int:
    """The line of gpu_jobs/JOB marked `# HANG: label`."""
    for number, line in enumerate((JOBS / job).read_text().splitlines(), start=1):
        if f"# HANG: {label}" in line:
            return number
    raise BenchError(f"no '# HANG: {label}' in {job}")


def job_command(ctx: Context, job: str, *args: str, ranks: int = 0) -> list[str]:
    """`python JOB --device D ARGS`, through torchrun when `ranks`."""
    launcher = (
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(ranks),
        ]
        if ranks
        else [sys.executable]
    )
    return [*launcher, str(JOBS / job), "--device", ctx.device, *args]


def read_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


@dataclass
class Supervised:
    finished: Finished
    final: dict[str, Any]
    hang: dict[str, Any] | None
    directory: Path

    def output(self) -> str:
        log = self.directory / "output.log"
        return log.read_text(errors="replace") if log.is_file() else ""


def hd_run(
    ctx: Context,
    name: str,
    command: list[str],
    timeout_s: float = 150.0,
    extra: tuple[str, ...] = (),
) -> Supervised:
    """`hangdoctor run --on-hang kill` on `command`, with the check's S."""
    directory = ctx.out / name
    finished = run_command(
        [
            *hangdoctor_command(),
            "run",
            "--report-dir",
            str(directory),
            "--hang-timeout",
            f"{ctx.hang_timeout_s:g}",
            "--on-hang",
            "kill",
            "--kill-grace",
            "5",
            *extra,
            "--",
            *command,
        ],
        timeout_s,
        cwd=JOBS,
    )
    final = read_json(directory / "report.json")
    if final is None:
        raise BenchError(f"no report.json from `hangdoctor run`: {tail(finished.stderr, 600)}")
    return Supervised(finished, final, read_json(directory / "hang-1" / "report.json"), directory)


def root(report: dict[str, Any] | None) -> dict[str, Any] | None:
    return report["findings"][0] if report and report["findings"] else None


def where(finding: dict[str, Any] | None) -> str:
    """`HD402 gpu.kernel_hang at job.py:12`."""
    if finding is None:
        return "no finding"
    location = (finding.get("culprit") or {}).get("location") or {}
    place = f" at {Path(location['file']).name}:{location['line']}" if location.get("file") else ""
    return f"{finding['id']} {finding['category']}{place}"


def at_line(finding: dict[str, Any] | None, job: str, label: str) -> bool:
    location = ((finding or {}).get("culprit") or {}).get("location") or {}
    return Path(location.get("file") or "").name == job and location.get("line") == marker_line(
        job, label
    )


def waited(hang: dict[str, Any] | None) -> float:
    """Seconds from the last progress to the declared hang."""
    if hang is None or hang.get("hang") is None:
        return float("nan")
    return float(hang["hang"]["declared_s"] - hang["hang"]["last_progress_s"])


def ids(report: dict[str, Any] | None) -> set[str]:
    return {f["id"] for f in (report or {}).get("findings", [])}


class Started:
    """A job started directly (for `dump`), killed with its tree on the way out."""

    def __init__(self, command: list[str], ready_s: float = 120.0) -> None:
        self.mark = new_mark()
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=marked_env(self.mark),
            cwd=JOBS,
            start_new_session=True,
        )
        seen = b""
        deadline = time.monotonic() + ready_s
        assert self.process.stdout is not None
        while b"READY" not in seen:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.kill()
                raise BenchError(f"the job never got READY: {tail(seen, 400)}")
            if select.select([self.process.stdout], [], [], 0.2)[0]:
                seen += os.read(self.process.stdout.fileno(), 65536)

    def kill(self) -> None:
        kill_tree(self.process, self.mark)


def hd_dump(ctx: Context, pid: int, name: str, *extra: str) -> dict[str, Any]:
    directory = ctx.out / name
    finished = run_command(
        [*hangdoctor_command(), "dump", str(pid), "--json", "--report-dir", str(directory), *extra],
        120.0,
    )
    report = read_json(directory / "report.json")
    if report is None:
        raise BenchError(f"no report from dump: {tail(finished.stderr, 600)}")
    return report


# ---- the checks ---------------------------------------------------------------------------------


def kernel_hang_run(ctx: Context) -> Outcome:
    done = hd_run(ctx, "kernel_hang", job_command(ctx, "kernel_never_ends.py"))
    first, seconds = root(done.hang), waited(done.hang)
    right = (
        first is not None
        and first["id"] == "HD402"
        and at_line(first, "kernel_never_ends.py", "item")
        and seconds < 2 * ctx.hang_timeout_s
    )
    return Outcome(f"{where(first)}; declared {seconds:.1f} s after the last progress", right)


def kernel_hang_dumps(ctx: Context) -> Outcome:
    job = Started(job_command(ctx, "kernel_never_ends.py"))
    try:
        time.sleep(2.0)
        plain = hd_dump(ctx, job.process.pid, "kernel_hang_dump")
        native = hd_dump(ctx, job.process.pid, "kernel_hang_dump_native", "--native")
    finally:
        job.kill()
    got, right = [], True
    for label, report in (("dump", plain), ("dump --native", native)):
        first = root(report)
        got.append(f"{label}: {where(first)}" + (", also HD104" if "HD104" in ids(report) else ""))
        right = right and (
            first is not None
            and first["id"] == "HD402"
            and at_line(first, "kernel_never_ends.py", "item")
            and "HD104" not in ids(report)
        )
    return Outcome("; ".join(got), right)


def dataloader_socket(ctx: Context) -> Outcome:
    done = hd_run(ctx, "dataloader_socket", job_command(ctx, "dataloader_socket.py"))
    first = root(done.hang)
    role = ((first or {}).get("culprit") or {}).get("role")
    right = (
        first is not None
        and first["category"] == "data.pipeline_stall"
        and role == "dataloader_worker"
        and at_line(first, "dataloader_socket.py", "recv")
    )
    return Outcome(f"{where(first)} ({role})", right)


def memory_then_queue(ctx: Context) -> Outcome:
    done = hd_run(ctx, "memory_then_queue", job_command(ctx, "memory_then_queue.py"))
    first = root(done.hang)
    memory = next((f for f in (done.hang or {}).get("findings", []) if f["id"] == "HD403"), None)
    right = (
        first is not None
        and first["category"] != "gpu.memory_exhausted"
        and at_line(first, "memory_then_queue.py", "get")
        and (memory is None or memory["severity"] == "warning")
    )
    context = f"; HD403 {memory['severity']}: {memory['title']}" if memory else "; no HD403"
    return Outcome(f"{where(first)}{context}", right)


def oom_line(ctx: Context) -> Outcome:
    done = hd_run(ctx, "keeps_graph_oom", job_command(ctx, "keeps_graph_oom.py"))
    first = root(done.final)
    right = (
        first is not None and first["id"] == "HD401" and at_line(first, "keeps_graph_oom.py", "oom")
    )
    return Outcome(f"verdict {done.final['verdict']}; {where(first)}", right)


def nan_retry(ctx: Context) -> Outcome:
    done = hd_run(ctx, "nan_retry", job_command(ctx, "nan_retry.py"))
    first, seconds = root(done.hang), waited(done.hang)
    progress = (done.hang or {}).get("capture", {}).get("job") or {}
    statuses = progress.get("progress") or [{}]
    steps = max(s.get("steps", 0) for s in statuses)
    nonfinite = max(s.get("nonfinite_losses", 0) for s in statuses)
    location = ((first or {}).get("culprit") or {}).get("location") or {}
    in_loop = any("while True" in line for line in (first or {}).get("evidence", []))
    right = (
        first is not None
        and first["category"] == "algorithm.nonfinite"
        and Path(location.get("file") or "").name == "nan_retry.py"
        and in_loop
        and seconds < 2 * ctx.hang_timeout_s
    )
    return Outcome(
        f"{where(first)}{' inside `while True`' if in_loop else ''}; declared "
        f"{seconds:.1f} s after the last progress; {steps} steps, {nonfinite} "
        "non-finite losses seen",
        right,
    )


def ddp_single_rank(ctx: Context) -> Outcome:
    done = hd_run(
        ctx, "ddp_single_rank", job_command(ctx, "ddp_worker_blocks.py", ranks=1), timeout_s=180.0
    )
    first = root(done.hang)
    rank = ((first or {}).get("culprit") or {}).get("rank")
    spurious = "HD301" in ids(done.hang) | ids(done.final)
    right = first is not None and first["id"] == "HD201" and rank == 0 and not spurious
    return Outcome(
        f"{where(first)} rank {rank}" + ("; also HD301" if spurious else "; no HD301"), right
    )


def doctor(ctx: Context) -> Outcome:
    plain = run_command([*hangdoctor_command(), "doctor", "--json"], 120.0)
    tests = run_command([*hangdoctor_command(), "doctor", "--selftest", "--json"], 300.0)
    checks = json.loads(plain.stdout)
    selftests = json.loads(tests.stdout)["selftests"]
    statuses = {t["name"]: t["status"] for t in selftests}
    wanted = [name for name in statuses if ctx.gpu or not re.search("gpu|nccl", name)]
    right = (
        plain.returncode in (0, 1)
        and tests.returncode in (0, 1)
        and all(statuses[name] == "passed" for name in wanted)
        and (not ctx.gpu or len(wanted) >= 4)
    )
    return Outcome(
        f"doctor exit {plain.returncode} ({checks['counts']}); self-tests {statuses}", right
    )


def _step_ms(finished: Finished) -> tuple[float, str]:
    text = finished.stdout.decode(errors="replace")
    step = re.search(r"STEP_MS ([\d.]+)", text)
    loss = re.search(r"LOSS (\S+)", text)
    if step is None or loss is None:
        raise BenchError(f"step_loop printed no result: {tail(finished.stderr, 600)}")
    return float(step.group(1)), loss.group(1)


def _calibrated_width(ctx: Context, target_ms: float) -> tuple[int, float]:
    """The width whose steps take about `target_ms` on this device, and their time."""
    done = run_command(
        job_command(ctx, "step_loop.py", "--calibrate", str(target_ms)), 180.0, cwd=JOBS
    )
    found = re.search(r"WIDTH (\d+) MS ([\d.]+)", done.stdout.decode(errors="replace"))
    if found is None:
        raise BenchError(f"calibration failed: {tail(done.stderr, 600)}")
    return int(found.group(1)), float(found.group(2))


def overhead(ctx: Context) -> Outcome:
    width, ms = _calibrated_width(ctx, 1.6)
    steps = str(int(min(4000, max(300, 6000 / ms))))  # about 6 s of steps a run
    walls: dict[str, list[float]] = {"direct": [], "run": []}
    step_ms: dict[str, list[float]] = {"direct": [], "run": []}
    losses: set[str] = set()
    for pair in range(3):
        for variant in ("direct", "run") if pair % 2 == 0 else ("run", "direct"):
            command = job_command(ctx, "step_loop.py", "--width", str(width), "--steps", steps)
            if variant == "run":
                command = [
                    *hangdoctor_command(),
                    "run",
                    "--report-dir",
                    str(ctx.out / f"overhead-{pair}"),
                    "--",
                    *command,
                ]
            done = run_command(command, 300.0, cwd=JOBS)
            measured, loss = _step_ms(done)
            walls[variant].append(done.wall_s)
            step_ms[variant].append(measured)
            losses.add(loss)
    ratios = [r / d for r, d in zip(walls["run"], walls["direct"], strict=True)]
    step_ratios = [r / d for r, d in zip(step_ms["run"], step_ms["direct"], strict=True)]
    # A job of a few seconds of steps after ~8 s of torch and CUDA start-up: the wall ratio
    # mixes hangdoctor's fixed start and report (seconds, once a run) with the per-step cost
    # (what a long job pays); both are stated, and the per-step ratio decides.
    extra = [r - d for r, d in zip(walls["run"], walls["direct"], strict=True)]
    return Outcome(
        f"width {width}, {steps} steps of {statistics.median(step_ms['direct']):.3f} ms; "
        f"per-step ratio {min(step_ratios):.3f}-{max(step_ratios):.3f}; wall ratio "
        f"{min(ratios):.3f}-{max(ratios):.3f} (direct {_seconds(walls['direct'])}, under run "
        f"{_seconds(walls['run'])}: {statistics.median(extra):+.2f} s a run, median); loss "
        f"identical: {'yes' if len(losses) == 1 else 'NO'}",
        len(losses) == 1 and statistics.median(step_ratios) <= 1.01,
    )


def _seconds(values: list[float]) -> str:
    return "/".join(f"{v:.1f}" for v in values) + " s"


def loss_hook(ctx: Context) -> Outcome:
    """The loss hook (with the GPU NaN/Inf reading) alone: its cost per call against a 1 ms
    step; on a GPU also blocks of ~1 ms steps with and without it, alternated in one process."""
    from hangdoctor.instrument import instrumented_environment

    status = ctx.out / "loss_hook_status"
    status.mkdir(parents=True, exist_ok=True)
    env = instrumented_environment(dict(os.environ), status)
    done = run_command(
        job_command(ctx, "step_loop.py", "--width", "64", "--hook-cost", "9"),
        300.0,
        env=env,
        cwd=JOBS,
    )
    text = done.stdout.decode(errors="replace")
    cost = re.search(r"HOOK_US (-?[\d.]+)(?: DEVICE_PATH_US (-?[\d.]+))?", text)
    if cost is None:
        raise BenchError(f"no HOOK_US: {tail(done.stdout, 400)} {tail(done.stderr, 600)}")
    hook_us = float(cost.group(1))
    got = f"{hook_us:.2f} us per call ({hook_us / 10:.2f}% of a 1 ms step)"
    right = hook_us <= 5.0
    if cost.group(2) is not None:
        device_us = float(cost.group(2))
        got += f"; the GPU path's code on CPU tensors {device_us:.2f} us ({device_us / 10:.2f}%)"
        right = right and device_us <= 5.0
    if ctx.gpu:
        width, _ = _calibrated_width(ctx, 1.0)
        done = run_command(
            job_command(ctx, "step_loop.py", "--width", str(width), "--ab", "12"),
            300.0,
            env=env,
            cwd=JOBS,
        )
        found = re.search(
            r"HOOK_RATIO ([\d.]+) STEP_MS ([\d.]+) SEEN (\d+)", done.stdout.decode(errors="replace")
        )
        if found is None:
            raise BenchError(f"no HOOK_RATIO: {tail(done.stderr, 600)}")
        ratio, ms, seen = float(found.group(1)), float(found.group(2)), int(found.group(3))
        got += (
            f"; {ms:.3f} ms steps with/without the hook: {ratio:.4f} "
            f"({(ratio - 1) * 100:+.2f}%), {seen} GPU losses read"
        )
        # Not judged on the ratio: on the H200 two runs of it gave +4.75% and -5.60%, and its
        # blocks of the same variant vary by 26-50% (the parts below): at ~1 ms steps the GPU's
        # own variation is ten times the hook's cost. The per-call cost above decides.
        right = right and seen > 0
        parts = run_command(
            job_command(ctx, "step_loop.py", "--width", str(width), "--parts", "12"),
            300.0,
            env=env,
            cwd=JOBS,
        )
        found_parts = re.findall(
            r"PART (\w+) ([\d.]+) MS [\d.]+ SPREAD ([\d.]+)", parts.stdout.decode(errors="replace")
        )
        got += "; by part: " + ", ".join(
            f"{name} {float(r):.4f} (spread {spread})" for name, r, spread in found_parts
        )
    return Outcome(got, right)


def _compile_log(stderr: bytes) -> list[str]:
    return [
        re.sub(r"^[VWI]\d+ [\d:.]+ \d+ ", "", line)
        for line in stderr.decode(errors="replace").splitlines()
        if "NumPy" not in line and "_conversion_method_template" not in line
    ]


def _final_loss(done: Finished) -> bytes | None:
    found = re.findall(rb"LOSS (\S+)", done.stdout)
    return found[-1] if found else None


def compiled(ctx: Context) -> Outcome:
    from hangdoctor.instrument import instrumented_environment

    def fresh_caches() -> dict[str, str]:
        """Inductor's and Triton's caches of this run alone: the second run would otherwise
        load the first one's compiled graphs and skip what compiling prints (seen on the H200:
        the TF32 warning, printed while compiling, was missing from the second run only)."""
        cache = tempfile.mkdtemp(prefix="compile-cache-", dir=ctx.out)
        return {
            **os.environ,
            "TORCH_LOGS": "graph_breaks",
            "TORCHINDUCTOR_CACHE_DIR": cache,
            "TRITON_CACHE_DIR": os.path.join(cache, "triton"),
        }

    plain = run_command(job_command(ctx, "compiled_step.py"), 400.0, env=fresh_caches(), cwd=JOBS)
    status = ctx.out / "compiled_status"
    status.mkdir(parents=True, exist_ok=True)
    ours = run_command(
        job_command(ctx, "compiled_step.py"),
        400.0,
        env=instrumented_environment(fresh_caches(), status),
        cwd=JOBS,
    )
    same_log = _compile_log(ours.stderr) == _compile_log(plain.stderr)
    if not same_log:  # kept for reading: which lines differ
        import difflib

        (ctx.out / "compile_log.diff").write_text(
            "\n".join(
                difflib.unified_diff(
                    _compile_log(plain.stderr),
                    _compile_log(ours.stderr),
                    "plain",
                    "instrumented",
                    lineterm="",
                )
            )
        )
    loss = {_final_loss(plain), _final_loss(ours)}
    breaks = ours.stderr.count(b"Graph break in user code")
    ours_named = PROBE.encode() in ours.stderr
    right = (
        plain.returncode == 0
        and ours.returncode == 0
        and same_log
        and len(loss) == 1
        and None not in loss
        and not ours_named
    )
    return Outcome(
        f"graph-break log identical: {'yes' if same_log else 'NO'} ({breaks} breaks, "
        f"all torch's own); result identical: {'yes' if len(loss) == 1 else 'NO'}; "
        f"hangdoctor named: {'YES' if ours_named else 'no'}",
        right,
    )


def collective_traceback(ctx: Context) -> Outcome:
    done = hd_run(
        ctx, "collective_error", job_command(ctx, "collective_error.py", ranks=2), timeout_s=180.0
    )
    output = done.output()
    raised = "Traceback (most recent call last)" in output
    ours = PROBE in output
    line = marker_line("collective_error.py", "collective")
    users = f'collective_error.py", line {line}' in output
    first = root(done.final)
    return Outcome(
        f"verdict {done.final['verdict']}; {where(first)}; traceback names the "
        f"user's line: {'yes' if users else 'no'}; a hangdoctor frame in it: "
        f"{'YES' if ours else 'no'}",
        raised and users and not ours,
    )


CHECKS = (
    Check(
        "kernel_hang",
        "a kernel that never finishes, host waits in `loss.item()`",
        "HD402 at the `.item()` line, declared after S (not 3xS)",
        True,
        kernel_hang_run,
        45,
    ),
    Check(
        "kernel_hang_dump",
        "the same process, `hangdoctor dump PID` and `dump PID --native`",
        "HD402 at the `.item()` line in both, no busy loop",
        True,
        kernel_hang_dumps,
        40,
    ),
    Check(
        "dataloader_socket",
        "GPU DataLoader job, worker blocked on a socket",
        "HD201 data.pipeline_stall, the worker and its line",
        False,
        dataloader_socket,
        35,
    ),
    Check(
        "memory_then_queue",
        "GPU memory at 99%, then `queue.get()` nothing will fill",
        "the blocked `queue.get()` as root cause; full memory at most a warning",
        True,
        memory_then_queue,
        35,
    ),
    Check(
        "oom_line",
        "graph kept every step until `CUDA out of memory`",
        "HD401 with the line the traceback names",
        True,
        oom_line,
        30,
    ),
    Check(
        "nan_retry",
        "loss NaN at step 30, the loop retries `optimizer.step()` forever",
        "algorithm.nonfinite after S, in the loop",
        False,
        nan_retry,
        35,
    ),
    Check(
        "ddp_single_rank",
        "single-rank NCCL job whose worker blocks",
        "HD201 with rank 0, no HD301",
        False,
        ddp_single_rank,
        45,
    ),
    Check(
        "doctor",
        "`doctor` and `doctor --selftest`",
        "all checks and self-tests run",
        False,
        doctor,
        60,
    ),
    Check(
        "overhead",
        "overhead, ~1.6 ms steps, 3 alternated pairs",
        "per-step ratio <= 1.01 (wall and fixed cost stated), loss bit-identical",
        False,
        overhead,
        110,
    ),
    Check(
        "loss_hook",
        "the loss hook with the NaN/Inf reading, ~1 ms steps",
        "< 0.5% of a 1 ms step per call (A/B blocks and their spread stated)",
        False,
        loss_hook,
        45,
    ),
    Check(
        "collective_traceback",
        "a collective that raises (NCCL: two ranks on one GPU)",
        "no hangdoctor frame in the user's traceback",
        False,
        collective_traceback,
        35,
    ),
    Check(
        "compile",
        "torch.compile'd training step under the instrumentation",
        "the same graph breaks and result, no warning of ours",
        False,
        compiled,
        120,
    ),
)


# ---- the run ------------------------------------------------------------------------------------


def environment(device: str) -> list[str]:
    import torch

    lines = [
        f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"host: {platform.node()}, Python {platform.python_version()}, torch "
        f"{torch.__version__} (CUDA {torch.version.cuda or 'none'})",
    ]
    if device == "cuda":
        lines.append(f"GPU: {torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}")
        try:
            import pynvml

            pynvml.nvmlInit()
            lines.append(f"driver: {pynvml.nvmlSystemGetDriverVersion()}")
        except Exception as error:  # the header only reports it
            lines.append(f"driver: unknown ({error})")
    else:
        lines.append("GPU: none: the GPU-only checks did not run")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--hang-timeout", type=float, default=10.0)
    parser.add_argument("--only", default="", help="comma-separated check names, run in that order")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--budget",
        type=float,
        default=570.0,
        help="seconds: on a GPU, a check that would run past it is not started",
    )
    args = parser.parse_args(argv)
    import torch

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    out = args.out or Path(tempfile.mkdtemp(prefix="gpu-checks-"))
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(device, args.hang_timeout, out)
    by_name = {c.name: c for c in CHECKS}
    unknown = [name for name in args.only.split(",") if name and name not in by_name]
    if unknown:
        parser.error(f"no such check: {', '.join(unknown)} (checks: {', '.join(by_name)})")
    # In the order given: on a GPU machine's short lease the checks that matter most run first.
    chosen = [by_name[name] for name in args.only.split(",") if name] or list(CHECKS)
    header = environment(device)
    print("\n".join(header), flush=True)
    rows = [
        row(("check", "situation", "expected", "got", "right?", "s")),
        row(("---",) * 4 + ("---", "---:")),
    ]
    results = []
    wrong = 0
    started_all = time.monotonic()
    for check in chosen:
        started = time.monotonic()
        spent = time.monotonic() - started_all
        if check.gpu_only and not ctx.gpu:
            outcome, verdict = Outcome("not run: needs a GPU", False), "n/a"
        elif ctx.gpu and spent + check.estimate_s > args.budget:
            outcome, verdict = Outcome(f"not run: {args.budget:g} s budget spent", False), "n/a"
        else:
            try:
                outcome = check.run(ctx)
            except (BenchError, subprocess.SubprocessError, OSError, ValueError, KeyError) as error:
                outcome = Outcome(f"failed to run: {error}"[:300], False)
            verdict = "yes" if outcome.right else "**no**"
            wrong += not outcome.right
        seconds = time.monotonic() - started
        print(f"{check.name}: {verdict}: {outcome.got} ({seconds:.0f} s)", flush=True)
        rows.append(
            row(
                (
                    check.name,
                    check.situation,
                    check.expected,
                    outcome.got,
                    verdict,
                    f"{seconds:.0f}",
                )
            )
        )
        results.append(
            {
                "check": check.name,
                "right": outcome.right if verdict != "n/a" else None,
                "got": outcome.got,
                "seconds": round(seconds, 1),
            }
        )
    table = "\n".join(rows)
    total = f"{len(chosen)} checks in {time.monotonic() - started_all:.0f} s; device {device}"
    print(f"\n{table}\n\n{total}")
    (out / "gpu_checks.md").write_text("\n".join(header) + f"\n\n{table}\n\n{total}\n")
    (out / "gpu_checks.json").write_text(
        json.dumps({"environment": header, "device": device, "checks": results}, indent=1)
    )
    print(f"reports in {out}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
