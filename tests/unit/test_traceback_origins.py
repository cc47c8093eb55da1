"""The origin of an exception through what re-raised it (analysis/tracebacks.py): a traceback
quoted in a message is what that exception wraps; two tracebacks back to back are two."""

from __future__ import annotations

from hangdoctor.analysis.tracebacks import tracebacks

_SITE = "/usr/lib/python3.11/site-packages"


def _tb(*frames: tuple[str, int, str], error: str, header: str = "Traceback") -> list[str]:
    lines = [f"{header} (most recent call last):"]
    for file, line, function in frames:
        lines += [f'  File "{file}", line {line}, in {function}', "    pass"]
    return [*lines, error]


def test_a_dataloader_workers_traceback_is_the_origin_of_the_main_loops_error():
    lines = [
        *_tb(
            ("/home/ml/train.py", 30, "<module>"),
            error="KeyError: Caught KeyError in DataLoader worker process 1.",
        ),
        *_tb(
            (f"{_SITE}/torch/utils/data/_utils/worker.py", 349, "_worker_loop"),
            ("/home/ml/train.py", 12, "__getitem__"),
            error="KeyError: 'label'",
            header="Original Traceback",
        ),
    ]
    outer, inner = tracebacks(lines)
    assert inner.quoted and outer.wrapped is inner and outer.origin is inner
    assert inner.process == "DataLoader worker process 1"
    assert (inner.location.file, inner.location.line) == ("/home/ml/train.py", 12)


def test_a_traceback_formatted_into_a_message_is_what_it_wraps():
    lines = [
        *_tb(
            ("/home/ml/train.py", 40, "<module>"),
            ("/home/ml/train.py", 22, "load"),
            error="RuntimeError: reading a label failed:",
        ),
        *_tb(("/home/ml/train.py", 20, "load"), error="KeyError: 'label'"),
    ]
    outer, inner = tracebacks(lines)
    assert outer.origin is inner and inner.location.line == 20


def test_a_threads_death_then_the_main_threads_error_are_two_failures():
    lines = [
        "Exception in thread Thread-1 (load):",
        *_tb(
            ("/usr/lib/python3.11/threading.py", 1045, "_bootstrap_inner"),
            ("/home/ml/train.py", 18, "load"),
            error="KeyError: 'label'",
        ),
        *_tb(
            ("/home/ml/train.py", 40, "<module>"),
            ("/home/ml/train.py", 33, "main"),
            error="RuntimeError: the loader thread sent no label for 5 s",
        ),
    ]
    thread, main = tracebacks(lines)
    assert not main.quoted and thread.wrapped is None and main.origin is main
    assert thread.thread is not None and thread.origin is thread


def test_a_chain_inside_a_spawned_processes_message_leads_to_its_first_exception():
    lines = [
        *_tb(
            ("/home/ml/train.py", 50, "<module>"),
            error="torch.multiprocessing.spawn.ProcessRaisedException: ",
        ),
        "",
        "-- Process 1 terminated with the following error:",
        *_tb(
            (f"{_SITE}/torch/multiprocessing/spawn.py", 90, "_wrap"),
            ("/home/ml/train.py", 21, "read_label"),
            error="KeyError: 'label'",
        ),
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        *_tb(
            (f"{_SITE}/torch/multiprocessing/spawn.py", 90, "_wrap"),
            ("/home/ml/train.py", 23, "read_label"),
            error="ValueError: bad record",
        ),
    ]
    outer = tracebacks(lines)[0]
    assert outer.origin.short_type == "KeyError" and outer.origin.rank == 1
    assert outer.origin.location.line == 21


def test_rays_remote_frames_follow_its_exception_line():
    lines = [
        *_tb(
            ("/home/ml/train.py", 32, "<module>"),
            error="ray.exceptions.RayTaskError(KeyError): \x1b[36mray::label_of()\x1b[39m "
            "(pid=19927, ip=192.0.2.2)",
        ),
        '  File "/home/ml/train.py", line 19, in label_of',
        '    return record["label"]',
        "KeyError: 'label'",
    ]
    outer = tracebacks(lines)[0]
    assert outer.short_type == "RayTaskError(KeyError)"
    assert outer.origin.location.line == 19
    assert outer.origin.process == "ray::label_of() (pid=19927)"


def test_the_lines_of_a_multi_line_message_are_kept_until_a_blank_line():
    lines = [
        *_tb(
            ("/home/ml/train.py", 64, "<module>"),
            error="RuntimeError: Error(s) in loading state_dict for Sequential:",
        ),
        '\tMissing key(s) in state_dict: "0.weight".',
        "",
        "epoch 1",
    ]
    (raised,) = tracebacks(lines)
    assert raised.details == ('Missing key(s) in state_dict: "0.weight".',)
