"""The whole tree's work between two samples of the light timeline (analysis.activity)."""

from __future__ import annotations

from hangdoctor.analysis.activity import compiling_stack, tree_activity
from hangdoctor.evidence.model import Frame, ProcessSample, TimelineSample
from hangdoctor.probes.procfs import parse_procs_running


def sample(
    elapsed: float,
    *processes: ProcessSample,
    output: int = 0,
    runnable: int | None = None,
    cores: int = 2,
) -> TimelineSample:
    return TimelineSample(
        elapsed_s=elapsed,
        output_bytes=output,
        processes=processes,
        runnable_tasks=runnable,
        cores=cores,
    )


def proc(
    pid: int, ppid: int, cpu: float, children: float = 0.0, written: int = 0, name: str = "python"
) -> ProcessSample:
    return ProcessSample(
        pid=pid,
        ppid=ppid,
        cpu_seconds=cpu,
        children_cpu_seconds=children,
        write_chars=written,
        read_chars=0,
        read_bytes=0,
        name=name,
    )


def test_children_that_came_and_went_between_samples_count():
    # The parent waits; a compiler child was born and reaped in between: 1.5 s of CPU.
    first = sample(0.0, proc(10, 1, 5.0))
    last = sample(2.0, proc(10, 1, 5.0, children=1.5))
    activity = tree_activity([first, last])
    assert activity is not None and activity.cpu_cores == 0.75 and activity.computing


def test_a_child_seen_before_it_exited_is_not_counted_twice():
    first = sample(0.0, proc(10, 1, 1.0), proc(11, 10, 4.0), proc(12, 11, 2.0))
    # 11 and its child 12 exited; 12's 2.5 s went into 11, 11's 5 s + 2.5 s into 10.
    last = sample(1.0, proc(10, 1, 1.0, children=7.5))
    activity = tree_activity([first, last])
    assert activity is not None and abs(activity.cpu_cores - 1.5) < 1e-9


def test_a_process_at_a_fraction_of_a_loaded_core_computes():
    busy_machine = [
        sample(0.0, proc(10, 1, 0.0), runnable=12),
        sample(2.0, proc(10, 1, 0.3), runnable=12),
    ]
    idle_machine = [
        sample(0.0, proc(10, 1, 0.0), runnable=1),
        sample(2.0, proc(10, 1, 0.3), runnable=1),
    ]
    loaded, quiet = tree_activity(busy_machine), tree_activity(idle_machine)
    assert loaded is not None and loaded.computing  # 0.15 of a core where a core gives 1/6
    assert quiet is not None and not quiet.computing  # 0.15 of an idle core: a poller
    polling = tree_activity(
        [sample(0.0, proc(10, 1, 0.0), runnable=50), sample(2.0, proc(10, 1, 0.02), runnable=50)]
    )
    assert polling is not None and not polling.computing


def test_data_written_beyond_the_output_is_work_and_the_output_is_not():
    archive = tree_activity(
        [sample(0.0, proc(10, 1, 0.0, written=0)), sample(2.0, proc(10, 1, 0.5, written=4 << 20))]
    )
    printing = tree_activity(
        [
            sample(0.0, proc(10, 1, 0.0, written=0), output=0),
            sample(2.0, proc(10, 1, 0.5, written=4 << 20), output=4 << 20),
        ]
    )
    spinning = tree_activity([sample(0.0, proc(10, 1, 0.0)), sample(2.0, proc(10, 1, 2.0))])
    assert archive is not None and archive.moving_data
    assert printing is not None and not printing.moving_data
    assert spinning is not None and spinning.computing and not spinning.moving_data


def test_compilers_in_the_tree_are_named():
    window = [
        sample(0.0, proc(10, 1, 0.0)),
        sample(1.0, proc(10, 1, 0.0), proc(11, 10, 0.2, name="cc1plus")),
        sample(2.0, proc(10, 1, 0.0, children=0.9)),
    ]
    activity = tree_activity(window)
    assert activity is not None and activity.compilers == ("cc1plus",)


def test_a_compiling_stack_and_a_compiled_model_running():
    inductor = [
        Frame(function="wait", file="/x/site-packages/torch/_inductor/async_compile.py", line=400),
        Frame(
            function="_compile", file="/x/site-packages/torch/_dynamo/convert_frame.py", line=900
        ),
    ]
    running = [
        Frame(function="call", file="/tmp/torchinductor_me/ab/cabc.py", line=40),
        Frame(function="_fn", file="/x/site-packages/torch/_dynamo/eval_frame.py", line=600),
        Frame(function="main", file="/home/me/train.py", line=12),
    ]
    assert compiling_stack(inductor)
    assert not compiling_stack(running)


def test_procs_running_is_read_from_proc_stat():
    assert parse_procs_running("cpu  1 2 3\nprocs_running 7\nprocs_blocked 0\n") == 7
    assert parse_procs_running("cpu 1 2 3\n") is None
