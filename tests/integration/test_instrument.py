"""The instrumentation `hangdoctor run` injects: real jobs, real torch, real status files."""

from __future__ import annotations

import ast
import contextlib
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangdoctor.evidence.model import ProgressStatus
from hangdoctor.instrument import bootstrap_dir, instrumented_environment
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.probes.progress import read_statuses

STEPS = 12

TRAIN = """
import os, sys, torch
steps, workers, nan_from = (int(arg) for arg in sys.argv[1:4])
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=workers)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = iter(loader)
for step in range(steps):
    x, y = next(batches)
    loss = torch.nn.functional.mse_loss(model(x), y)
    if step >= nan_from:
        loss = loss * float("nan")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("PID", os.getpid())
print("LOSS", loss.item().hex())
"""

DISTRIBUTED = """
import os, sys, time, torch
import torch.distributed as dist
count, mode = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["TEST_PORT"],
                        rank=int(os.environ["RANK"]), world_size=2)
tensor = torch.ones(4)
for _ in range(count):
    dist.all_reduce(tensor)
print("PID", os.getpid(), "SUM", tensor[0].item(), flush=True)
if mode == "hang":
    if dist.get_rank() == 1:
        time.sleep(120)  # never joins the last all_reduce
    dist.all_reduce(tensor)
dist.destroy_process_group()
"""

NO_TORCH = """
import sys, threading
print("THREADS", threading.active_count())
print("PROBE", "_hangdoctor_probe" in sys.modules)
print("SITE", sys.modules["sitecustomize"].__file__)
"""


class Job:
    """A job started in its own session, so that it and its children can always be killed."""

    def __init__(self, script: Path, *args: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(script), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.communicate(timeout=10)


@pytest.fixture
def jobs() -> Iterator:
    """Factory: `jobs(script, *args, env=...)` starts a job; every one is killed at the end."""
    started: list[Job] = []

    def start(script: Path, *args: str, env: dict[str, str]) -> Job:
        job = Job(script, *args, env=env)
        started.append(job)
        return job

    yield start
    for job in started:
        job.kill()


def write_script(directory: Path, name: str, source: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(source))
    return path


def plain_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HANGDOCTOR_STATUS_DIR")}
    env["PYTHONWARNINGS"] = "ignore"  # torch warns about numpy missing; keep stderr readable
    return env


def instrumented(status_dir: Path, **extra: str) -> dict[str, str]:
    status_dir.mkdir(parents=True, exist_ok=True)
    return {**instrumented_environment(plain_env(), status_dir), **extra}


def output_value(out: str, key: str) -> str:
    return next(line.split()[1] for line in out.splitlines() if line.startswith(key + " "))


def train(
    jobs, tmp_path: Path, env: dict[str, str], workers: int = 0, nan_from: int = STEPS
) -> tuple[int, str]:
    script = write_script(tmp_path, "train.py", TRAIN)
    code, out, err = jobs(script, str(STEPS), str(workers), str(nan_from), env=env).finish()
    assert code == 0, err
    return int(output_value(out, "PID")), output_value(out, "LOSS")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, timeout_s: float = 30):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


@pytest.fixture(scope="module")
def plain_loss(tmp_path_factory) -> str:
    """The final loss of the training script without instrumentation."""
    pytest.importorskip("torch")
    directory = tmp_path_factory.mktemp("plain")
    script = write_script(directory, "train.py", TRAIN)
    job = Job(script, str(STEPS), "0", str(STEPS), env=plain_env())
    try:
        code, out, err = job.finish()
    finally:
        job.kill()
    assert code == 0, err
    return output_value(out, "LOSS")


@pytest.mark.torch
def test_training_progress_is_reported_and_the_result_unchanged(jobs, tmp_path, plain_loss):
    pytest.importorskip("torch")
    status_dir = tmp_path / "status"
    pid, loss = train(jobs, tmp_path, instrumented(status_dir))
    assert loss == plain_loss  # bit for bit
    [status] = read_statuses(status_dir)
    assert status.pid == pid
    assert status.rank is None
    script, line, function = status.last_sync_at[0]  # where backward() was called
    assert script.endswith("train.py") and function == "<module>"
    assert TRAIN.splitlines()[line - 1].strip() == "loss.backward()"
    assert (status.steps, status.batches, status.losses_seen) == (STEPS, STEPS, STEPS)
    assert status.data_wait_s > 0
    assert status.nonfinite_losses == 0 and status.last_nonfinite_at is None
    assert status.last_loss == pytest.approx(float.fromhex(loss))
    assert status.last_step_at and status.last_batch_at and status.updated_at
    assert status.collectives == 0 and status.in_collective is None
    assert not list(status_dir.glob(".*"))  # no temporary file left behind


@pytest.mark.torch
def test_forked_dataloader_workers(jobs, tmp_path, plain_loss):
    pytest.importorskip("torch")
    status_dir = tmp_path / "status"
    pid, loss = train(jobs, tmp_path, instrumented(status_dir), workers=2)
    assert loss == plain_loss
    statuses = read_statuses(status_dir)
    # The workers make no progress of their own, so they stay silent: only the rank reports.
    assert [s.pid for s in statuses] == [pid]
    assert (statuses[0].steps, statuses[0].batches, statuses[0].losses_seen) == (STEPS,) * 3


@pytest.mark.torch
def test_nonfinite_loss_is_counted(jobs, tmp_path):
    pytest.importorskip("torch")
    status_dir = tmp_path / "status"
    train(jobs, tmp_path, instrumented(status_dir), nan_from=STEPS - 4)
    [status] = read_statuses(status_dir)
    assert status.losses_seen == STEPS
    assert status.nonfinite_losses == 4
    assert status.last_nonfinite_at is not None
    assert status.last_loss is None  # the last loss was NaN, which strict JSON cannot hold


SKIPS = """
import sys, torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = torch.nn.MSELoss()
mode = sys.argv[1]
for step in range(12):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    if step % 3 == 2:
        x[0, 0] = float("nan")  # a bad record: the loss function returns NaN
    loss = criterion(model(x), y) if mode == "module" else torch.nn.functional.mse_loss(model(x), y)
    if mode != "backprop" and not torch.isfinite(loss):
        continue  # skip the batch, draw another: backward() never sees this loss
    optimizer.zero_grad()
    loss.backward()
    if torch.isfinite(loss):
        optimizer.step()
with torch.no_grad():  # an evaluation's NaN loss is not a training loss
    torch.nn.functional.mse_loss(model(torch.full((2, 4), float("nan"))), torch.zeros(2, 1))
try:
    torch.nn.functional.cross_entropy(torch.randn(4, 3), torch.zeros(5, dtype=torch.long))
except ValueError:
    import traceback
    traceback.print_exc(file=sys.stdout)
"""


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["function", "module", "backprop"])
def test_a_nonfinite_loss_is_counted_once_whether_or_not_backward_sees_it(jobs, tmp_path, mode):
    """A loop that skips its NaN losses never calls backward() on them: they are read where
    the loss function returns them, and one that is then backpropagated is not counted twice.
    An error raised in a loss function shows no frame of ours."""
    pytest.importorskip("torch")
    status_dir = tmp_path / "status"
    script = write_script(tmp_path, "skips.py", SKIPS)
    code, out, err = jobs(script, mode, env=instrumented(status_dir)).finish()
    assert code == 0, err
    [status] = read_statuses(status_dir)
    assert status.nonfinite_losses == 4
    assert status.losses_seen == 12
    assert status.steps == 8
    assert "Traceback (most recent call last):" in out and "skips.py" in out
    assert not names_the_probe(out), out


def start_ranks(jobs, tmp_path: Path, status_dir: Path, count: int, mode: str) -> list[Job]:
    script = write_script(tmp_path, "ranks.py", DISTRIBUTED)
    port = str(free_port())
    return [
        jobs(script, str(count), mode, env=instrumented(status_dir, RANK=str(rank), TEST_PORT=port))
        for rank in (0, 1)
    ]


@pytest.mark.torch
def test_collectives_are_counted_per_rank(jobs, tmp_path):
    pytest.importorskip("torch")
    status_dir = tmp_path / "status"
    ranks = start_ranks(jobs, tmp_path, status_dir, 5, "done")
    pids = {}
    for rank, job in enumerate(ranks):
        code, out, err = job.finish()
        assert code == 0, err
        pids[int(output_value(out, "PID"))] = rank
    statuses = read_statuses(status_dir)
    assert {s.pid: s.rank for s in statuses} == pids
    for status in statuses:
        assert status.collectives == 5
        assert status.last_collective == "all_reduce"
        assert status.in_collective is None and status.in_collective_seq is None
        # where the script last synchronised: its all_reduce line, at module level
        script, line, function = status.last_sync_at[0]
        assert script.endswith("ranks.py") and function == "<module>"
        assert "dist.all_reduce(tensor)" in DISTRIBUTED.splitlines()[line - 1]


@pytest.mark.torch
def test_blocked_collective_is_visible(jobs, tmp_path):
    pytest.importorskip("torch")
    status_dir = tmp_path / "status"
    start_ranks(jobs, tmp_path, status_dir, 5, "hang")

    def blocked() -> dict[int, ProgressStatus] | None:
        # Each rank writes on its own schedule (at most every 0.5 s): wait until rank 1's file
        # has caught up with its last collective too.
        by_rank = {s.rank: s for s in read_statuses(status_dir) if s.rank is not None}
        rank0, rank1 = by_rank.get(0), by_rank.get(1)
        settled = rank0 and rank0.in_collective and rank1 and rank1.collectives >= 5
        return by_rank if settled else None

    by_rank = wait_for(blocked)
    assert by_rank[0].in_collective == "all_reduce"
    assert by_rank[0].in_collective_seq == 6 and by_rank[0].collectives == 6
    assert by_rank[0].in_collective_since <= time.time()
    assert by_rank[1].in_collective is None and by_rank[1].collectives == 5


def test_no_torch_means_no_thread_and_no_file(jobs, tmp_path):
    status_dir = tmp_path / "status"
    script = write_script(tmp_path, "plain.py", NO_TORCH)
    code, out, err = jobs(script, env=instrumented(status_dir)).finish()
    assert code == 0, err
    assert output_value(out, "THREADS") == "1"
    assert output_value(out, "PROBE") == "False"
    assert output_value(out, "SITE") == str(bootstrap_dir() / "sitecustomize.py")
    assert not list(status_dir.iterdir())


def test_existing_sitecustomize_still_runs(jobs, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("print('THEIR-SITECUSTOMIZE', flush=True)\n")
    script = write_script(tmp_path, "plain.py", NO_TORCH)
    (tmp_path / "status").mkdir()
    env = instrumented_environment({**plain_env(), "PYTHONPATH": str(theirs)}, tmp_path / "status")
    assert env["PYTHONPATH"] == os.pathsep.join([str(bootstrap_dir()), str(theirs)])
    code, out, err = jobs(script, env=env).finish()
    assert code == 0, err
    assert out.count("THEIR-SITECUSTOMIZE") == 1
    assert output_value(out, "SITE") == str(theirs / "sitecustomize.py")  # it has its name


@pytest.mark.torch
def test_unwritable_status_dir_leaves_the_job_alone(jobs, tmp_path, plain_loss):
    pytest.importorskip("torch")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    _, loss = train(jobs, tmp_path, instrumented_environment(plain_env(), blocker / "status"))
    assert loss == plain_loss


def test_read_statuses_skips_what_it_cannot_read(tmp_path):
    assert read_statuses(tmp_path / "missing") == []
    good = ProgressStatus(pid=7, rank=1, updated_at=time.time(), steps=3)
    (tmp_path / "status-7.json").write_text(good.model_dump_json())
    (tmp_path / "status-8.json").write_text(good.model_dump_json()[:20])  # torn
    (tmp_path / "status-9.json").write_text("{not json")
    (tmp_path / "status-10.json").write_text('{"pid": 10}')  # no updated_at
    (tmp_path / ".status-11.json.tmp").write_text(good.model_dump_json())  # being written
    assert read_statuses(tmp_path) == [good]


def test_instrumented_environment(tmp_path):
    ours = str(bootstrap_dir())
    env = instrumented_environment(
        {"PATH": "/bin", "PYTHONPATH": f"/a{os.pathsep}{ours}"}, Path("relative")
    )
    assert env["PYTHONPATH"] == os.pathsep.join([ours, "/a"])
    assert env["HANGDOCTOR_STATUS_DIR"] == os.path.abspath("relative")
    assert env["PATH"] == "/bin"
    assert instrumented_environment({}, tmp_path)["PYTHONPATH"] == ours
    assert (bootstrap_dir() / "sitecustomize.py").is_file()


def names_the_probe(text: str) -> bool:
    """Whether the job's output names a module of the probe (a frame or a warning of ours)."""
    return any(name in text for name in (protocol.PROBE_MODULE, *protocol.PROBE_PARTS))


def test_bootstrap_parses_as_python_38():
    for path in bootstrap_dir().glob("*.py"):
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 8))


def python_38() -> str | None:
    pyenv = glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8"))
    candidates = ["python3.8", *pyenv]
    for candidate in candidates:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            if done.stdout.strip() == "(3, 8)":
                return candidate
    return None


def test_python_38_arms_on_a_stub_torch(tmp_path):
    """Another interpreter, without pydantic or hangdoctor: the bootstrap still arms on `import
    torch` (a stub here, so the hooks fail quietly), reports once and keeps torch's loader."""
    interpreter = python_38()
    if interpreter is None:
        pytest.skip("no Python 3.8 here")
    stub = tmp_path / "stub" / "torch"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("")
    status_dir = tmp_path / "status"
    status_dir.mkdir()
    env = instrumented_environment({**plain_env(), "PYTHONPATH": str(stub.parent)}, status_dir)
    code = (
        "import torch; print(type(torch.__loader__).__name__, type(torch.__spec__.loader).__name__)"
    )
    done = subprocess.run(
        [interpreter, "-c", code], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["SourceFileLoader", "SourceFileLoader"]
    [status] = read_statuses(status_dir)
    assert status.steps == 0 and status.rank is None


TRACEBACKS = """
import os, sys, traceback, torch
import torch.distributed as dist
rank = int(os.environ["RANK"])
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["TEST_PORT"],
                        rank=rank, world_size=2)
dist.barrier()  # both ranks are past start-up (else rank 0 may still be connecting to rank 1)
if rank == 1:
    os._exit(0)  # leaves without a word: rank 0's next collective fails in gloo
loss = (torch.ones(2, requires_grad=True) * 2).sum()
loss.backward()
for failing in (lambda: loss.backward(),  # the graph is gone: autograd raises
                lambda: dist.all_reduce(torch.ones(4))):  # the peer is gone: gloo raises
    try:
        failing()
    except RuntimeError:
        print("".join(traceback.format_exc()), flush=True)
import atexit
atexit._run_exitfuncs()  # the exit hooks (the probe's last status write), as at a normal exit
os._exit(0)  # not gloo's teardown, which with its peer gone aborts at random (torch 2.13)
"""


@pytest.mark.torch
def test_errors_raised_through_the_hooks_show_no_frame_of_ours(jobs, tmp_path):
    """The user's traceback of an error inside backward or a collective goes from their line
    into torch, as without hangdoctor."""
    pytest.importorskip("torch")
    if sys.version_info < (3, 11):
        pytest.skip("before 3.11 a re-raise keeps the wrapper's frame")
    status_dir = tmp_path / "status"
    script = write_script(tmp_path, "errors.py", TRACEBACKS)
    port = str(free_port())
    ranks = [
        jobs(script, env=instrumented(status_dir, RANK=str(rank), TEST_PORT=port))
        for rank in (0, 1)
    ]
    code, out, err = ranks[0].finish()
    assert code == 0, err
    assert out.count("Traceback (most recent call last):") == 2, out
    assert "backward through the graph a second time" in out
    assert "gloo" in out  # gloo's own message about the peer that left
    assert not names_the_probe(out), out
    assert "in collective" not in out and 'errors.py", line' in out
    [status] = [s for s in read_statuses(status_dir) if s.rank == 0]
    assert status.collectives == 2  # the barrier, and the failed collective was still seen


COMPILED = """
import sys, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
compiled_model = torch.compile(model, backend="eager")

@torch.compile(backend="eager")
def train_step():  # backward inside a compiled function: a graph break of torch's own
    loss = torch.nn.functional.mse_loss(compiled_model(x), y)
    loss.backward()
    return loss

@torch.compile(backend="eager")
def optimizer_step():  # the step hooks run inside compiled code
    optimizer.step()

for _ in range(4):
    optimizer.zero_grad()
    loss = train_step()
    optimizer_step()
print("LOSS", loss.item().hex())
"""


def _compile_log(err: str) -> list[str]:
    """Dynamo's graph-break log and warnings, without timestamps and process ids."""
    return [
        re.sub(r"^[VWI]\d+ [\d:.]+ \d+ ", "", line)
        for line in err.splitlines()
        if "NumPy" not in line and "_conversion_method_template" not in line
    ]


@pytest.mark.torch
def test_torch_compile_sees_no_difference(jobs, tmp_path):
    """Under the instrumentation a compiled training step breaks its graphs where it does
    without it (torch's own break at backward), with no warning of ours, the same result, and
    its steps and losses counted."""
    pytest.importorskip("torch")
    script = write_script(tmp_path, "compiled.py", COMPILED)
    logs = {"TORCH_LOGS": "graph_breaks"}
    code, plain_out, plain_err = jobs(script, env={**plain_env(), **logs}).finish(timeout=300)
    assert code == 0, plain_err
    status_dir = tmp_path / "status"
    code, out, err = jobs(script, env=instrumented(status_dir, **logs)).finish(timeout=300)
    assert code == 0, err
    assert "Unsupported Tensor.backward() call" in plain_err  # the break torch makes itself
    assert _compile_log(err) == _compile_log(plain_err)
    assert not names_the_probe(err), err
    assert output_value(out, "LOSS") == output_value(plain_out, "LOSS")
    [status] = read_statuses(status_dir)
    assert (status.steps, status.losses_seen) == (4, 4)


SCRIPTED = """
import torch
from torch import nn
torch.manual_seed(0)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 1)
        self.criterion = nn.MSELoss()

    def forward(self, x, y):
        out = self.layer(x)
        return self.criterion(out, y) + nn.functional.smooth_l1_loss(out, y)


x, y = torch.randn(8, 4), torch.randn(8, 1)
scripted = torch.jit.script(Regressor())
traced = torch.jit.trace(Regressor(), (x, y))
print("LOSS", scripted(x, y).item().hex(), traced(x, y).item().hex())
"""


@pytest.mark.torch
def test_torchscript_and_tracing_see_no_difference(jobs, tmp_path):
    """torch.jit.script compiles a module whose forward calls a loss function that the
    instrumentation wraps, and torch.jit.trace traces it, as without the instrumentation: the
    same output, no warning of ours."""
    pytest.importorskip("torch")
    script = write_script(tmp_path, "scripted.py", SCRIPTED)
    code, plain_out, plain_err = jobs(script, env=plain_env()).finish(timeout=300)
    assert code == 0, plain_err
    code, out, err = jobs(script, env=instrumented(tmp_path / "status")).finish(timeout=300)
    assert code == 0, err
    assert out == plain_out
    assert err == plain_err
    assert not names_the_probe(err), err


STOPPED_IN_USER_CODE = """
import sys, time, torch
print("READY", flush=True)
if sys.argv[1] == "handles":
    import signal
    signal.signal(signal.SIGTERM, lambda *_: (print("HANDLED", flush=True), sys.exit(3)))


def evaluate():
    while True:
        time.sleep(0.05)  # LINE: evaluate


evaluate()
"""


def _stopped(jobs, tmp_path: Path, mode: str) -> tuple[int, str, Path]:
    script = write_script(tmp_path, "evaluate.py", STOPPED_IN_USER_CODE)
    job = jobs(script, mode, env=instrumented(tmp_path / "status"))
    assert job.proc.stdout is not None
    assert job.proc.stdout.readline().startswith("READY")
    time.sleep(0.5)  # into the loop
    job.proc.send_signal(signal.SIGTERM)
    code, out, _ = job.finish()
    return code, out, tmp_path / "status" / f"stopped-{job.proc.pid}.txt"


@pytest.mark.torch
def test_a_rank_stopped_by_sigterm_leaves_its_stack_and_dies_as_before(jobs, tmp_path):
    """A launcher ending a rank (torchrun after a peer failed) learns nothing from it; the
    stack it was stopped in is written for the report, and SIGTERM still ends it."""
    pytest.importorskip("torch")
    code, _, stopped = _stopped(jobs, tmp_path, "default")
    assert code == -signal.SIGTERM
    from hangdoctor.analysis.frames import innermost_user_frame
    from hangdoctor.analysis.tracebacks import main_thread_stack

    frame = innermost_user_frame(main_thread_stack(stopped.read_text()))
    assert frame is not None and frame.function == "evaluate"
    line = STOPPED_IN_USER_CODE.splitlines()[frame.line - 1]
    assert "LINE: evaluate" in line


@pytest.mark.torch
def test_a_job_that_handles_sigterm_still_handles_it(jobs, tmp_path):
    pytest.importorskip("torch")
    code, out, _ = _stopped(jobs, tmp_path, "handles")
    assert code == 3 and "HANDLED" in out


THREAD_DIES = """
import sys, threading

seen = []
if sys.argv[1] == "own-hook-before":  # installed before torch's import arms ours
    threading.excepthook = lambda args: seen.append(args.exc_type.__name__)
import torch

if sys.argv[1] == "own-hook-after":
    threading.excepthook = lambda args: seen.append(args.exc_type.__name__)


def parse(line):
    return int(line)  # LINE: raises


worker = threading.Thread(target=parse, args=("12x",), name="parser")
worker.start()
worker.join()
finisher = threading.Thread(target=sys.exit, name="finisher")  # SystemExit: threading is silent
finisher.start()
finisher.join()
print("SEEN", ",".join(seen) or "-", flush=True)
"""


@pytest.mark.torch
def test_a_thread_that_dies_is_recorded_whole_and_still_printed(jobs, tmp_path):
    """The traceback threading prints on stderr is what the job printed before; the same
    traceback is in `died-<pid>.txt` in one piece, and a SystemExit leaves no record."""
    pytest.importorskip("torch")
    script = write_script(tmp_path, "dies.py", THREAD_DIES)
    _, _, plain_err = jobs(script, "default", env=plain_env()).finish()
    job = jobs(script, "default", env=instrumented(tmp_path / "status"))
    code, out, err = job.finish()
    assert code == 0 and "SEEN -" in out
    assert err == plain_err  # threading's own printing, unchanged
    from hangdoctor.analysis.tracebacks import tracebacks
    from hangdoctor.probes.progress import read_thread_deaths

    deaths = read_thread_deaths(tmp_path / "status")
    assert [d.pid for d in deaths] == [job.proc.pid]
    (raised,) = tracebacks(tuple(deaths[0].text.splitlines()))
    assert raised.thread == "parser" and raised.short_type == "ValueError"
    assert raised.location is not None and raised.location.function == "parse"
    assert "LINE: raises" in THREAD_DIES.splitlines()[raised.location.line - 1]


@pytest.mark.torch
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_jobs_own_thread_hook_still_gets_every_death(jobs, tmp_path, when):
    """Installed before torch's import, the job's hook runs after ours records; installed
    after, it replaces ours (nothing recorded). Either way it sees what it saw before."""
    pytest.importorskip("torch")
    from hangdoctor.probes.progress import read_thread_deaths

    script = write_script(tmp_path, "dies.py", THREAD_DIES)
    job = jobs(script, f"own-hook-{when}", env=instrumented(tmp_path / "status"))
    code, out, err = job.finish()
    assert code == 0 and "SEEN ValueError,SystemExit" in out and "Traceback" not in err
    recorded = read_thread_deaths(tmp_path / "status")
    assert len(recorded) == (1 if when == "before" else 0)


ASYNC_LOADER = """
import asyncio, json, sys, torch

records = ['{"x": 1}', '{"x": 2', '{"x": 3}']


async def produce(queue, i):
    await asyncio.sleep(0.01)
    await queue.put(json.loads(records[i]))  # LINE: raises


async def take(queue):
    return await queue.get()  # LINE: awaits


loop = asyncio.new_event_loop()
queue = asyncio.Queue()
producers = [loop.create_task(produce(queue, 1)) for _ in range(2)]
print("READY", flush=True)
loop.run_until_complete(take(queue))
"""


@pytest.mark.torch
def test_asyncio_tasks_are_written_on_request_and_left_unretrieved(jobs, tmp_path):
    """At a hang the tasks of a running event loop are read: where the pending one awaits,
    what the finished ones raised; reading them does not mark their exceptions retrieved
    (asyncio's own report of them stays)."""
    pytest.importorskip("torch")
    from hangdoctor.probes.async_tasks import read_tasks
    from hangdoctor.probes.flight_recorder import request_dumps

    script = write_script(tmp_path, "loader.py", ASYNC_LOADER)
    status = tmp_path / "status"
    job = jobs(script, env=instrumented(status))
    assert job.proc.stdout is not None
    assert job.proc.stdout.readline().startswith("READY")
    time.sleep(0.5)  # the producers have died
    asked = request_dumps(status)
    wait_for(lambda: read_tasks(status, asked), timeout_s=10)
    tasks = read_tasks(status, asked)
    lines = ASYNC_LOADER.splitlines()
    pending = [t for t in tasks if not t.done]
    failed = [t for t in tasks if t.done]
    assert len(pending) == 1 and len(failed) == 2
    awaiting = next(f for f in pending[0].awaiting if f.file == str(script))
    assert "LINE: awaits" in lines[awaiting.line - 1]
    for task in failed:
        assert task.exception is not None and task.exception.startswith("JSONDecodeError")
        assert task.retrieved is False
        raised = next(f for f in task.raised if f.file == str(script))
        assert "LINE: raises" in lines[raised.line - 1]


GROUPS = """
import os, sys, time, torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=0,
                        world_size=1)
first = dist.new_group(ranks=[0])  # LINE: first
second = dist.new_group()  # LINE: second
time.sleep(1.2)  # the writer's next look
print("DONE", flush=True)
dist.destroy_process_group()
"""


@pytest.mark.torch
def test_group_creations_are_counted_with_where_they_were_made(jobs, tmp_path):
    pytest.importorskip("torch")
    script = write_script(tmp_path, "groups.py", GROUPS)
    code, out, err = jobs(script, str(free_port()), env=instrumented(tmp_path / "status")).finish()
    assert code == 0 and "DONE" in out, err
    (status,) = read_statuses(tmp_path / "status")
    assert status.groups_created == 2
    lines = GROUPS.splitlines()
    marks = [
        lines[line - 1].split("# LINE: ")[1]
        for _, file, line, _ in status.group_sites
        if file == str(script)
    ]
    assert marks == ["first", "second"]


SELF_READ = """
import multiprocessing, os, signal, sys, time, torch

def child(read_end):
    os.read(read_end, 1)  # LINE: child-read

read_end, write_end = os.pipe()
worker = multiprocessing.get_context("fork").Process(target=child, args=(read_end,))
worker.start()
# A framework that restores "the handlers it saw" resets the stack signal (Lightning does).
signal.signal(signal.SIGRTMIN + int(sys.argv[1]), signal.SIG_DFL)
print("READY", worker.pid, flush=True)
os.read(read_end, 1)  # LINE: parent-read
"""


@pytest.mark.torch
def test_processes_read_their_own_waits_and_keep_the_stack_signal(jobs, tmp_path):
    """On request, the parent (its writer thread) and a forked child (a thread of its own)
    write their threads' system calls and their descriptors, which /proc hides from others
    where ptrace is refused; a stack signal reset to its default is handled again."""
    pytest.importorskip("torch")
    from hangdoctor.probes.flight_recorder import request_dumps
    from hangdoctor.probes.job_kernel import collect_kernel_states
    from hangdoctor.probes.job_stacks import handles_signal, request_stacks

    script = write_script(tmp_path, "reader.py", SELF_READ)
    status = tmp_path / "status"
    job = jobs(script, str(protocol.STACK_SIGNAL_OFFSET), env=instrumented(status))
    assert job.proc.stdout is not None
    parent, child = job.proc.pid, int(job.proc.stdout.readline().split()[1])
    signum = signal.SIGRTMIN + protocol.STACK_SIGNAL_OFFSET
    wait_for(lambda: handles_signal(parent, signum), timeout_s=10)  # put back by the writer

    for pid in (parent, child):  # both are instrumented: each has its thread map
        wait_for(lambda pid=pid: (status / protocol.thread_map_file(pid)).exists(), timeout_s=10)
    asked = request_dumps(status)
    found = collect_kernel_states(status, asked, [parent, child], timeout_s=20)
    lines = SELF_READ.splitlines()
    for pid in (parent, child):
        main = found[pid].threads[pid]
        assert (main.state, main.syscall_name) == ("S", "read"), (pid, main)
        fd = main.syscall_args[0]
        assert any(f.fd == fd and f.target.startswith("pipe:") for f in found[pid].files)
    stacks = request_stacks(status, [parent])
    innermost = stacks[parent][parent].frames[0]
    assert "LINE: parent-read" in lines[innermost.line - 1]


JOINING = """
import os, sys, torch
import torch.distributed as dist

os.environ.setdefault("WORLD_SIZE", "2")
print("READY", flush=True)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=0)
"""


@pytest.mark.torch
def test_a_rank_still_joining_says_its_rank_and_world_size(jobs, tmp_path):
    """A rank waiting in init_process_group for a peer that is not coming has told its rank
    and world size already (the world size from the environment it set itself)."""
    pytest.importorskip("torch")
    script = write_script(tmp_path, "join.py", JOINING)
    status = tmp_path / "status"
    job = jobs(script, str(free_port()), env=instrumented(status))
    assert job.proc.stdout is not None
    assert job.proc.stdout.readline().startswith("READY")
    joined = wait_for(
        lambda: [s for s in read_statuses(status) if s.rank is not None], timeout_s=30
    )
    assert (joined[0].pid, joined[0].rank, joined[0].world_size) == (job.proc.pid, 0, 2)


WRITER = """
import os, sys, time, torch

print("READY", flush=True)
with open(sys.argv[1], "wb") as shard:
    for _ in range(40):
        shard.write(os.urandom(64 * 1024))
        shard.flush()
        time.sleep(0.05)
time.sleep(30)
"""


@pytest.mark.torch
def test_a_process_notes_the_bytes_it_writes_for_a_supervisor_that_may_not_read_them(
    jobs, tmp_path
):
    """/proc/PID/io is hidden where ptrace is refused: the process's own reading of it, in its
    status, shows a job writing its shards at work."""
    pytest.importorskip("torch")
    script = write_script(tmp_path, "shards.py", WRITER)
    status = tmp_path / "status"
    job = jobs(script, str(tmp_path / "shard.bin"), env=instrumented(status))
    assert job.proc.stdout is not None
    assert job.proc.stdout.readline().startswith("READY")
    written = wait_for(
        lambda: [s for s in read_statuses(status) if (s.write_chars or 0) >= 2 * 2**20],
        timeout_s=30,
    )
    assert written[0].pid == job.proc.pid


PROCESS_ENDED = """
import multiprocessing, sys, time


def serve():
    time.sleep(60)


if __name__ == "__main__":
    child = multiprocessing.Process(target=serve)
    child.start()
    child.terminate()  # LINE: terminate
    child.join()
    print("CHILD", child.pid, child.exitcode, flush=True)
"""


def test_a_process_the_job_terminates_is_noted_with_the_line_that_did(jobs, tmp_path):
    """`Process.terminate()` still ends the child as before (exit code -15), and the call is
    noted: the child's pid, the signal, and the job's line that made it."""
    from hangdoctor.probes.progress import read_process_ends

    script = write_script(tmp_path, "ends.py", PROCESS_ENDED)
    job = jobs(script, env=instrumented(tmp_path / "status"))
    code, out, _err = job.finish()
    assert code == 0
    child, exit_code = out.split()[1:3]
    assert exit_code == "-15"
    (end,) = read_process_ends(tmp_path / "status")
    assert (end.pid, end.signal, end.by_pid) == (int(child), "SIGTERM", job.proc.pid)
    assert end.file == str(script) and end.function == "<module>"
    assert "LINE: terminate" in PROCESS_ENDED.splitlines()[end.line - 1]


POOL_BLOCK_ENDED = """
import multiprocessing, time


def started(queue):
    global running
    running = queue


def slow(x):
    running.put(x)
    time.sleep(60)
    return x


if __name__ == "__main__":
    running = multiprocessing.Queue()
    with multiprocessing.Pool(2, started, (running,)) as pool:  # LINE: with
        pending = pool.map_async(slow, range(2), chunksize=1)
        running.get(), running.get()  # both workers are in a task: neither leaves on its own
    print("LEFT", flush=True)
"""


def test_workers_a_pool_terminates_are_noted_with_the_jobs_line_that_led_there(jobs, tmp_path):
    """Leaving `with Pool()` terminates its workers from multiprocessing's own code: the call is
    noted where it was made (the library) and where the job's code led to it (the with line)."""
    from hangdoctor.analysis.deaths import ended_at
    from hangdoctor.probes.progress import read_process_ends

    script = write_script(tmp_path, "pool_block.py", POOL_BLOCK_ENDED)
    job = jobs(script, env=instrumented(tmp_path / "status"))
    code, out, _err = job.finish()
    assert code == 0 and "LEFT" in out
    ends = read_process_ends(tmp_path / "status")
    assert len(ends) == 2 and all(e.signal == "SIGTERM" for e in ends)
    for end in ends:
        assert end.file.endswith("multiprocessing/pool.py")
        where = ended_at(end)
        assert where.file == str(script)
        assert "LINE: with" in POOL_BLOCK_ENDED.splitlines()[where.line - 1]


EXITS_EARLY = """
import signal, sys, threading, torch


def budget_spent(signum, frame):
    sys.exit(0)  # LINE: exit


threading.Thread(target=sys.exit, args=(3,)).start()  # a thread's SystemExit ends only it
signal.signal(signal.SIGALRM, budget_spent)
signal.alarm(1)
while True:
    signal.pause()
"""


def test_where_the_main_thread_called_sys_exit_is_noted_and_the_exit_unchanged(jobs, tmp_path):
    """A rank that leaves with `sys.exit()` (here from a time budget's signal handler) leaves
    no traceback: its status says where it called it. The exit code is the job's own, and a
    thread's `sys.exit()` (which ends only that thread) is not taken for it."""
    from hangdoctor.probes.progress import with_sync_source

    script = write_script(tmp_path, "budget.py", EXITS_EARLY)
    job = jobs(script, env=instrumented(tmp_path / "status"))
    code, _out, _err = job.finish()
    assert code == 0
    (status,) = read_statuses(tmp_path / "status")
    assert status.exit_call is not None and status.exit_call[0] == str(script)
    assert "LINE: exit" in EXITS_EARLY.splitlines()[status.exit_call[1] - 1]
    site = with_sync_source(status).exit_site
    assert site is not None and site.code is not None and "sys.exit(0)" in site.code


OFF_LOOP = """\
import asyncio
import threading


async def main():
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    safe = loop.create_future()
    awaiting = threading.Event()

    def other_thread():
        awaiting.wait(5)  # set once main awaits `done`: set_result then has a callback to schedule
        done.set_result(2)  # LINE: off-loop
        loop.call_soon_threadsafe(safe.set_result, 1)  # thread-safe: not noted; wakes the loop

    threading.Thread(target=other_thread, name="helper").start()
    loop.call_soon(awaiting.set)  # runs on the loop's next turn, with main suspended below
    print("RESULTS", await done, await safe, flush=True)


asyncio.run(main())
"""


def test_work_scheduled_on_an_event_loop_from_another_thread_is_noted_with_its_line(jobs, tmp_path):
    """`Future.set_result` from another thread still completes the future as before, and the
    call is noted (the thread, the job's line); `call_soon_threadsafe` is not."""
    from hangdoctor.probes.progress import read_offloop_calls

    script = write_script(tmp_path, "offloop.py", OFF_LOOP)
    job = jobs(script, env=instrumented(tmp_path / "status"))
    code, out, _err = job.finish()
    assert code == 0
    assert out.split() == ["RESULTS", "2", "1"]
    (call,) = read_offloop_calls(tmp_path / "status")
    assert (call.pid, call.thread, call.file) == (job.proc.pid, "helper", str(script))
    assert "LINE: off-loop" in OFF_LOOP.splitlines()[call.line - 1]
