"""What the SDK and the watch hook cost: `hangdoctor.heartbeat()` per call against an empty
loop (target <= 1 us), side by side with NVRx's `RankMonitorClient.send_heartbeat()` where
nvidia-resiliency-ext is importable; `phase()` and `mark()`; and the interpreter start-up cost
of the `hangdoctor-watch.pth` hook when HANGDOCTOR_WATCH is not set (and what arming costs
when it is).

Each variant runs in a fresh interpreter, the variants alternated round by round; the tables
give medians (and for start-up, the median of per-pair ratios). Nothing asserts on timings.

    .venv/bin/python benchmarks/bench_sdk.py [--rounds 7] [--calls 1000000]
        [--startup-pairs 30] [--nvrx-python PATH]

`--nvrx-python`: an interpreter where `nvidia_resiliency_ext` and torch import (NVRx needs
torch; `pip install --no-deps nvidia-resiliency-ext` beside a CPU torch, plus its small
dependencies defusedxml, pyyaml, pynvml, nvidia-ml-py); default: this one.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PTH = SRC / "hangdoctor-watch.pth"
TIMEOUT_S = 300

# One measurement in a fresh interpreter: ns per call of BODY, minus the empty loop's, both
# timed in the same process (best of 5 repeats each, as timeit advises for the lower bound of
# noise), printed as "<ns per call> <ns per empty iteration>".
MEASURE = """
import sys, time
SETUP
def run(n):
    started = time.perf_counter_ns()
    for i in range(n):
        BODY
    return time.perf_counter_ns() - started
def empty(n):
    started = time.perf_counter_ns()
    for i in range(n):
        pass
    return time.perf_counter_ns() - started
n = int(sys.argv[1])
run(n // 10); empty(n // 10)
body = min(run(n) for _ in range(5)) / n
bare = min(empty(n) for _ in range(5)) / n
print(body - bare, bare)
"""

VARIANTS = {
    "heartbeat, nothing watching": ("import hangdoctor\nhb = hangdoctor.heartbeat", "hb(step=i)"),
    "heartbeat, under run (probe armed)": (
        "import hangdoctor\nhb = hangdoctor.heartbeat",
        "hb(step=i)",
    ),
    "heartbeat, watch() (probe + watchdog)": (
        "import hangdoctor, tempfile\nhangdoctor.watch(report_dir=tempfile.mkdtemp())\n"
        "hb = hangdoctor.heartbeat",
        "hb(step=i)",
    ),
    "heartbeat(), no step, under run": ("import hangdoctor\nhb = hangdoctor.heartbeat", "hb()"),
    "mark(text), under run": ("import hangdoctor\nmk = hangdoctor.mark", "mk('after forward')"),
    "with phase(name, budget_s), under run": (
        "import hangdoctor\nph = hangdoctor.phase",
        "with ph('eval', 900): pass",
    ),
}
ARMED = {
    "heartbeat, under run (probe armed)",
    "heartbeat(), no step, under run",
    "mark(text), under run",
    "with phase(name, budget_s), under run",
}

NVRX_SETUP = """
import os, tempfile, logging
logging.disable(logging.CRITICAL)
os.environ.setdefault("RANK", "0"); os.environ.setdefault("WORLD_SIZE", "1")
os.environ.setdefault("LOCAL_RANK", "0"); os.environ.setdefault("LOCAL_WORLD_SIZE", "1")
import torch.multiprocessing as mp
from nvidia_resiliency_ext.fault_tolerance.config import FaultToleranceConfig
from nvidia_resiliency_ext.fault_tolerance.rank_monitor_server import RankMonitorServer
from nvidia_resiliency_ext.fault_tolerance import rank_monitor_client as rmc
from nvidia_resiliency_ext.fault_tolerance.data import FT_RANK_MONITOR_IPC_SOCKET_ENV_VAR
socket_path = os.path.join(tempfile.mkdtemp(), "rmon.socket")
server = RankMonitorServer.run_in_subprocess(FaultToleranceConfig(), socket_path,
                                             mp_ctx=mp.get_context("spawn"))
os.environ[FT_RANK_MONITOR_IPC_SOCKET_ENV_VAR] = socket_path
client = rmc.RankMonitorClient()
client.init_workload_monitoring()
hb = client.send_heartbeat
"""


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGDOCTOR_")}
    env["PYTHONPATH"] = str(SRC)
    return {**env, **(extra or {})}


def measure(
    python: str, setup: str, body: str, calls: int, env: dict[str, str]
) -> tuple[float, float]:
    code = MEASURE.replace("SETUP", setup).replace("BODY", body)
    done = subprocess.run(
        [python, "-c", code, str(calls)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
    cost, bare = done.stdout.split()
    return float(cost), float(bare)


def bench_calls(rounds: int, calls: int, nvrx_python: str | None) -> None:
    status_dir = tempfile.mkdtemp(prefix="bench-sdk-")
    armed = _env({"HANGDOCTOR_STATUS_DIR": status_dir, "HANGDOCTOR_SUPERVISED": "1"})
    results: dict[str, list[float]] = {name: [] for name in VARIANTS}
    bare: list[float] = []
    nvrx: list[float] = []
    nvrx_error = None
    for _ in range(rounds):
        for name, (setup, body) in VARIANTS.items():
            env = armed if name in ARMED else _env()
            cost, empty = measure(sys.executable, setup, body, calls, env)
            results[name].append(cost)
            bare.append(empty)
        if nvrx_python is not None and nvrx_error is None:
            try:
                cost, _ = measure(nvrx_python, NVRX_SETUP, "hb()", max(200, calls // 1000), _env())
                nvrx.append(cost)
            except Exception as error:  # reported in the table, not raised
                nvrx_error = str(error)
    shutil.rmtree(status_dir, ignore_errors=True)
    print(
        f"#### Per call, minus an empty loop ({rounds} rounds alternated, {calls:,} calls each; "
        f"medians)\n"
    )
    print("| call | ns per call | min | max | target |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(
        f"| empty loop iteration (the baseline, not subtracted) | {statistics.median(bare):.0f} "
        f"| {min(bare):.0f} | {max(bare):.0f} | |"
    )
    for name, values in results.items():
        target = "<= 1000" if name.startswith("heartbeat") else ""
        print(
            f"| `{name}` | {statistics.median(values):.0f} | {min(values):.0f} | "
            f"{max(values):.0f} | {target} |"
        )
    if nvrx:
        print(
            f"| NVRx `RankMonitorClient.send_heartbeat()` (rank monitor server running) | "
            f"{statistics.median(nvrx):.0f} | {min(nvrx):.0f} | {max(nvrx):.0f} | |"
        )
    elif nvrx_python is not None:
        print(f"| NVRx `send_heartbeat()` | not measured: {nvrx_error} | | | |")
    print()


def _venv(where: Path, with_hook: bool) -> str:
    """A venv of this interpreter seeing this environment's packages, with or without the
    hook, as a wheel install would place it."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=TIMEOUT_S
    )
    python = str(where / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    Path(site, "00-outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    if with_hook:
        shutil.copy(PTH, Path(site, PTH.name))
    return python


def _wall(command: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        command,
        env=env,
        cwd=cwd,
        check=True,
        timeout=TIMEOUT_S,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def bench_startup(pairs: int) -> None:
    # As a wheel install does: this environment may set PYTHONDONTWRITEBYTECODE, and every
    # start would otherwise compile hangdoctor's modules again.
    compileall.compile_dir(str(SRC), quiet=1)
    with tempfile.TemporaryDirectory(prefix="bench-sdk-") as temporary:
        base = Path(temporary)
        without = _venv(base / "without", with_hook=False)
        with_hook = _venv(base / "with", with_hook=True)
        script = base / "job.py"
        script.write_text("pass\n")
        watch_env = _env({"HANGDOCTOR_WATCH": "1", "HANGDOCTOR_REPORT_DIR": str(base / "reports")})
        rows = {"no hook": [], "hook, variable unset": [], "hook, HANGDOCTOR_WATCH=1": []}
        for index in range(pairs + 2):  # the first two are a warm-up
            order = [
                ("no hook", without, _env()),
                ("hook, variable unset", with_hook, _env()),
                ("hook, HANGDOCTOR_WATCH=1", with_hook, watch_env),
            ]
            if index % 2:
                order.reverse()
            for name, python, env in order:
                seconds = _wall([python, str(script)], env, temporary)
                if index >= 2:
                    rows[name].append(seconds)
    base_times = rows["no hook"]
    print(
        f"#### Interpreter start-up with the .pth hook (`python job.py`, an empty script; "
        f"{pairs} rounds alternated; medians)\n"
    )
    print("| variant | median ms | min ms | max ms | ratio to no hook (median of pairs) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, values in rows.items():
        ratios = [v / b for v, b in zip(values, base_times, strict=True)]
        print(
            f"| {name} | {statistics.median(values) * 1e3:.1f} | {min(values) * 1e3:.1f} | "
            f"{max(values) * 1e3:.1f} | {statistics.median(ratios):.3f} |"
        )
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--startup-pairs", type=int, default=30)
    parser.add_argument("--nvrx-python", default=sys.executable)
    parser.add_argument("--skip-startup", action="store_true")
    parser.add_argument("--skip-calls", action="store_true")
    args = parser.parse_args()
    if not args.skip_calls:
        bench_calls(args.rounds, args.calls, args.nvrx_python)
    if not args.skip_startup:
        bench_startup(args.startup_pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
