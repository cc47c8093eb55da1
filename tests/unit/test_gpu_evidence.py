"""GPU diagnosis on recorded evidence in the real formats (py-spy's JSON of a process waiting for
an H200, NVML readings, PyTorch's OOM output): CI has no GPU."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.analysis.device import device_wait, uses_gpu
from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    GpuSample,
    JobRecord,
    OpenFile,
    ProcessEvidence,
    PythonThread,
    Snapshot,
)
from hangdoctor.probes.pystacks import parse_py_spy_json
from hangdoctor.probes.sources import with_source
from hangdoctor.rules.engine import run_rules
from hangdoctor.rules.examples import example
from hangdoctor.taxonomy import Category
from tests.conftest import FIXTURES, hang_line

GPU = FIXTURES / "gpu"
JOB = GPU / "kernel_never_ends.py"
RECORDED_JOB = "/root/gpu_checks/kernel_never_ends.py"
H200 = 143_771 * 2**20
GPU_FILES = (
    OpenFile(fd=3, target="/dev/nvidiactl", mode="rw"),
    OpenFile(fd=4, target="/dev/nvidia-uvm", mode="rw"),
    OpenFile(fd=5, target="/dev/nvidia0", mode="rw"),
)


def recorded_main_thread(name: str) -> PythonThread:
    """The job's main thread from a recorded py-spy dump, its frames pointed at the job's source
    here so that the source lines can be read as a capture does."""
    threads = parse_py_spy_json((GPU / name).read_text())
    main = next(t for t in threads.values() if t.name == "MainThread")
    frames = tuple(
        with_source(f.model_copy(update={"file": str(JOB)})) if f.file == RECORDED_JOB else f
        for f in main.frames
    )
    return main.model_copy(update={"frames": frames})


def dumped_process(name: str, cpu: float, on_gpu: bool = True) -> ProcessEvidence:
    thread = b.thread(4711, name="MainThread", state="R", cpu=cpu).model_copy(
        update={"python": recorded_main_thread(name)}
    )
    return ProcessEvidence(
        pid=4711,
        ppid=1,
        name="python3",
        cmdline=("python3", str(JOB)),
        threads=(thread,),
        open_files=GPU_FILES if on_gpu else (),
        is_python=True,
        stacks_sampled=True,
        state="running",
    )


def dump_bundle(name: str, utilization: float | None, on_gpu: bool = True) -> Bundle:
    """`hangdoctor dump`: two snapshots 0.5 s apart, NVML read at each when there is NVML."""
    readings = (
        (
            GpuSample(
                index=0,
                utilization_percent=utilization,
                memory_used_bytes=2 * 2**30,
                memory_total_bytes=H200,
            ),
        )
        if utilization is not None
        else ()
    )
    snapshots = tuple(
        Snapshot(
            elapsed_s=0.5 * i,
            wall_time=1000.0 + 0.5 * i,
            gpus=readings,
            processes=(dumped_process(name, cpu=50.0 + 0.5 * i, on_gpu=on_gpu),),
        )
        for i in range(2)
    )
    return Bundle(tool_version="test", created_at=0.0, target_pid=4711, snapshots=snapshots)


def test_native_frames_name_the_cuda_wait_and_the_users_line():
    wait = device_wait(recorded_main_thread("item_wait_native.pyspy.json").frames, gpu=False)
    assert wait is not None and wait.native
    assert wait.call == "cudaStreamSynchronize"
    assert wait.frame is not None and wait.frame.line == hang_line(
        "gpu/kernel_never_ends.py", "item"
    )


def test_python_frames_are_a_device_wait_only_in_a_gpu_process():
    frames = recorded_main_thread("item_wait.pyspy.json").frames
    wait = device_wait(frames, gpu=True)
    assert wait is not None and not wait.native and wait.call == ".item()"
    assert device_wait(frames, gpu=False) is None  # .item() on a CPU tensor computes


def test_torch_cuda_synchronize_is_a_wait_from_its_own_frame():
    frames = (
        b.frame(f"{b.SITE}/torch/cuda/__init__.py", 1083, "synchronize"),
        b.frame("train.py", 12, "main", code="torch.cuda.synchronize()"),
    )
    wait = device_wait(frames, gpu=False)
    assert wait is not None and wait.call == "torch.cuda.synchronize()"
    assert wait.frame is not None and wait.frame.line == 12


def test_a_line_that_calls_python_code_is_not_waiting():
    frames = (
        b.frame("model.py", 5, "forward", code="return self.net(x)"),
        b.frame("train.py", 12, "main", code="total += model(x).item()"),
    )
    assert device_wait(frames, gpu=True) is None


def test_gpu_processes_are_told_by_their_device_files():
    assert uses_gpu(GPU_FILES)
    assert not uses_gpu(
        (OpenFile(fd=3, target="/dev/null"), OpenFile(fd=4, target="socket:[1234]"))
    )


def root_cause(bundle: Bundle):
    findings = run_rules(JobView(bundle)).findings
    assert findings, "no finding"
    return findings[0], findings


def test_dump_says_kernel_hang_at_the_item_line_not_busy_loop():
    root, findings = root_cause(dump_bundle("item_wait.pyspy.json", utilization=100.0))
    assert root.id == "HD402" and root.category == Category.GPU_KERNEL_HANG
    assert root.culprit is not None and root.culprit.location is not None
    assert root.culprit.location.line == hang_line("gpu/kernel_never_ends.py", "item")
    assert root.culprit.location.file == str(JOB)
    assert "HD104" not in {f.id for f in findings}


def test_dump_native_says_kernel_hang_even_without_nvml():
    root, findings = root_cause(dump_bundle("item_wait_native.pyspy.json", utilization=None))
    assert root.id == "HD402"
    assert any("cudaStreamSynchronize" in line for line in root.evidence)
    assert any("NVML" in line for line in root.evidence)
    assert "HD104" not in {f.id for f in findings}


def test_a_cpu_process_spinning_on_the_same_line_is_a_busy_loop():
    root, findings = root_cause(dump_bundle("item_wait.pyspy.json", utilization=None, on_gpu=False))
    assert root.id == "HD104"
    assert "HD402" not in {f.id for f in findings}


def test_a_wait_on_an_idle_gpu_is_still_named():
    root, _ = root_cause(dump_bundle("item_wait_native.pyspy.json", utilization=0.0))
    assert root.id == "HD402" and "idle" in root.title
    assert root.confidence < 0.6


def test_full_gpu_memory_is_context_behind_a_blocked_queue_get():
    root, findings = root_cause(example("HD403", "memory full, the main thread waits on a queue"))
    assert root.category == Category.PROCESS_DEADLOCK  # the queue nothing will fill
    assert root.culprit is not None and root.culprit.location is not None
    assert root.culprit.location.code == "batch = batches.get()"
    memory = next(f for f in findings if f.id == "HD403")
    assert memory.severity == "warning" and "99%" in memory.title


def test_full_gpu_memory_is_the_cause_when_the_thread_is_in_the_allocator():
    root, _ = root_cause(
        example("HD403", "memory full and the stuck thread waits in the allocator")
    )
    assert root.id == "HD403" and root.severity == "error"
    assert root.culprit is not None and root.culprit.pid == 7


def test_cuda_oom_names_the_line_of_the_users_code():
    lines = tuple((GPU / "oom_traceback.log").read_text().splitlines())
    bundle = b.bundle(b.process(1, ppid=None)).model_copy(
        update={
            "snapshots": (),
            "job": JobRecord(started_at=0.0, ended_at=9.0, exit_code=1, output_tail=lines),
        }
    )
    root, _ = root_cause(bundle)
    assert root.id == "HD401"
    assert root.culprit is not None and root.culprit.location is not None
    location = root.culprit.location
    assert (Path(location.file).name, location.line) == ("keeps_graph.py", 18)
    assert location.code == "loss = model(x).square().mean()"
    assert "keeps_graph.py:18" in root.title
