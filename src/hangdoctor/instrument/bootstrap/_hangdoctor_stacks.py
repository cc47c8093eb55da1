"""Python stacks without ptrace: what a process of the job writes about itself, through
faulthandler (no GIL needed) and threading's excepthook, into the status folder.

- `fault-<pid>.txt`: every thread's stack when a fatal signal kills the process;
- `stopped-<pid>.txt`: every thread's stack when SIGTERM ends it (the launcher ending the
  ranks that survived one that failed);
- `died-<pid>.txt`: the traceback of a thread that died of an exception, written whole;
- `raised-<pid>.txt`: the uncaught exception that ends the process, written whole before Python
  prints it;
- `stacks-<pid>.txt` and `threads-<pid>.json`: every thread's stack on the supervisor's stack
  signal, where py-spy may not read the process.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType

    from hangdoctor.instrument.bootstrap import _hangdoctor_files as files
    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
else:
    import _hangdoctor_files as files
    import _hangdoctor_protocol as protocol
    import _hangdoctor_state as shared

probe = shared.probe

_fault_file: IO[str] | None = None  # kept open: faulthandler writes to it as the process dies


def log_fatal_signals() -> None:
    """Where a process dies of SIGSEGV, SIGBUS, SIGABRT, SIGFPE or SIGILL, Python's faulthandler
    writes every thread's stack to `fault-<pid>.txt` in the status folder (not the job's
    output), then the signal takes its course as before. Left alone when the job (or
    PYTHONFAULTHANDLER) enabled faulthandler itself."""
    global _fault_file
    try:
        import faulthandler

        if probe.directory is None or (faulthandler.is_enabled() and _fault_file is None):
            return
        path = os.path.join(probe.directory, protocol.fault_file(os.getpid()))
        _fault_file = files.private_open(path)  # kept open: must outlive this call
        faulthandler.enable(file=_fault_file, all_threads=True)
    except Exception:
        pass


def keep_fatal_signals_in_loader_workers(torch: object) -> None:
    """A DataLoader worker installs torch's own SIGSEGV/SIGBUS/SIGFPE handlers as it starts
    (they print `Unexpected segmentation fault encountered in worker`), replacing faulthandler's:
    the worker's Python stack would be lost. After torch's handlers are in, faulthandler is
    armed again on top of them: it writes the worker's stack to its `fault-<pid>.txt`, then
    hands the signal to torch's handler, which reports it to the main process as before."""
    try:
        import importlib

        signal_handling = importlib.import_module("torch.utils.data._utils.signal_handling")
        original = signal_handling._set_worker_signal_handlers
        if getattr(original, "_hangdoctor_rearms", False):
            return

        def _set_worker_signal_handlers(*args: object) -> object:
            import faulthandler

            fault_file = _fault_file
            rearm = fault_file is not None and faulthandler.is_enabled()
            if rearm:
                # enable() is a no-op while enabled: disabled first, torch's handlers go in
                # over the ones from before faulthandler, and faulthandler over torch's, which
                # it calls after writing the stack.
                faulthandler.disable()
            result = original(*args)
            if rearm and fault_file is not None:
                with contextlib.suppress(Exception):
                    faulthandler.enable(file=fault_file, all_threads=True)
            return result

        _set_worker_signal_handlers._hangdoctor_rearms = True  # type: ignore[attr-defined]
        setattr(signal_handling, "_set_worker_signal_handlers", _set_worker_signal_handlers)  # noqa: B010
    except Exception:
        pass


_stop_file: IO[str] | None = None  # kept open: faulthandler writes to it when SIGTERM comes


def log_stop_signal() -> None:
    """When one rank fails (a collective timeout, an exception), torchrun and mp.spawn end the
    others with SIGTERM, and where those were at that moment is often the answer: the slow
    evaluation the failed rank gave up waiting for. Nothing else records it, so faulthandler
    writes every thread's stack to `stopped-<pid>.txt` and then chains to the handler that was
    there before: the process ends, or handles SIGTERM, exactly as it would have. A handler the
    job installs later with `signal.signal` replaces this one, and that is fine too."""
    global _stop_file
    try:
        import faulthandler
        import signal

        if probe.directory is None or not hasattr(faulthandler, "register"):
            return
        path = os.path.join(probe.directory, protocol.stopped_file(os.getpid()))
        stop_file = files.private_open(path)
        faulthandler.register(signal.SIGTERM, file=stop_file, all_threads=True, chain=True)
        _stop_file = stop_file  # a forked child's replaces the parent's (closed when dropped)
    except Exception:
        pass


_DEATH_BYTES = 64 * 1024  # of one traceback, at most


def _write_traceback(directory: str, name: str, text: str, mode: int) -> None:
    """The traceback's last _DEATH_BYTES, in one write, into the status folder's file `name`
    (`mode`: os.O_APPEND after what is there, or os.O_TRUNC in its place)."""
    data = text.encode("utf-8", errors="replace")[-_DEATH_BYTES:]
    path = os.path.join(directory, name)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | mode, files.FILE_MODE)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def log_thread_deaths() -> None:
    """A thread that dies of an exception (a prefetching thread that met a bad record) leaves a
    consumer waiting for it forever, and its traceback is the answer; but threading prints it
    to stderr line by line, and the job's stdout, which shares the log, lands between those
    lines. So `threading.excepthook` is wrapped: the hook that was there (threading's own, or
    the job's) runs exactly as before, after the traceback is appended whole to
    `died-<pid>.txt`. A hook the job installs later replaces this one, and that is fine too."""
    try:
        previous = threading.excepthook
        if shared.is_wrapper(previous):
            return

        def excepthook(args: threading.ExceptHookArgs) -> None:
            _note_thread_death(args)
            previous(args)

        shared.mark_wrapper(excepthook)
        threading.excepthook = excepthook
    except Exception:
        pass


def _note_thread_death(args: threading.ExceptHookArgs) -> None:
    """Write the dead thread's traceback as threading prints it (its header names the thread),
    in one write, into this process's file (a forked child has its own pid, hence its own)."""
    try:
        # threading is silent on SystemExit too
        if probe.directory is None or args.exc_type is SystemExit:
            return
        import traceback

        name = args.thread.name if args.thread is not None else "unknown"
        text = f"Exception in thread {name}:\n" + "".join(traceback.format_exception(
            args.exc_type, args.exc_value, args.exc_traceback))
        _write_traceback(probe.directory, protocol.died_file(os.getpid()), text, os.O_APPEND)
    except Exception:
        pass


def log_uncaught_exception() -> None:
    """The exception that ends a process is the answer to why the job failed, but what Python
    prints of it can be lost: a signal handler that raises while the traceback is printed
    (PyTorch's SIGCHLD handler, when a DataLoader worker dies) tears it after its first line,
    and a job that closed or replaced stderr prints nothing. So `sys.excepthook` is wrapped:
    the traceback is written whole into `raised-<pid>.txt`, then the hook that was there runs
    exactly as before. Only in the process that installed it (a forked child is its parent's)."""
    import sys

    try:
        previous = sys.excepthook
        if shared.is_wrapper(previous):
            return
        owner = os.getpid()

        def excepthook(kind, value, tb):  # type: ignore[no-untyped-def]
            if os.getpid() == owner:
                _note_uncaught(kind, value, tb)
            previous(kind, value, tb)

        shared.mark_wrapper(excepthook)
        sys.excepthook = excepthook
    except Exception:
        pass


def _note_uncaught(kind, value, tb) -> None:  # type: ignore[no-untyped-def]
    """Write the traceback in one write; an exception that a signal handler raises while it is
    formatted (the one that names the dead worker) is written after it, as Python chains."""
    try:
        if probe.directory is None or kind is SystemExit or kind is KeyboardInterrupt:
            return
        import traceback

        try:
            text = "".join(traceback.format_exception(kind, value, tb))
        except BaseException as interrupting:  # a signal handler raised: keep both
            text = "".join(traceback.format_exception(kind, value, tb)) + (
                "\nDuring handling of the above exception, another exception occurred:\n\n"
                + "".join(traceback.format_exception(
                    type(interrupting), interrupting, interrupting.__traceback__))
            )
        _write_traceback(probe.directory, protocol.raised_file(os.getpid()), text, os.O_TRUNC)
    except BaseException:
        pass


# Where ptrace is refused (a container without CAP_SYS_PTRACE, Yama, a process that made itself
# undumpable), py-spy cannot read this process. Then the supervisor sends STACK_SIGNAL, and
# faulthandler, from its C signal handler (no GIL needed: it works while a thread holds the GIL in
# C code), writes every thread's stack into `stacks-<pid>.txt`. Its threads are named by
# pthread identifier; `threads-<pid>.json` maps those to the kernel's thread ids and says which
# signal to send. The supervisor sends it only to a process whose /proc/PID/status shows a
# handler for it (SigCgt): a process that does not handle it would die of it.
STACK_SIGNAL_OFFSET = protocol.STACK_SIGNAL_OFFSET  # a real-time signal no common library uses
_stack_file = None
_thread_map_written = None
# The kernel id of the thread that registered, by pthread id: in a forked child (a DataLoader
# worker) `threading` still gives that thread the parent's `native_id` (Python 3.11), which would
# place the worker's stack on the parent's main thread.
_registered_native_ids = {}  # type: dict[int, int]


def register_stack_dump() -> None:
    global _stack_file, _thread_map_written, _registered_native_ids
    try:
        import faulthandler
        import signal

        if probe.directory is None or not hasattr(signal, "SIGRTMIN"):
            return
        signum = signal.SIGRTMIN + STACK_SIGNAL_OFFSET
        pid = os.getpid()
        path = os.path.join(probe.directory, protocol.stacks_file(pid))
        stack_file = open(path, "ab")  # noqa: SIM115
        os.chmod(stack_file.name, files.FILE_MODE)
        faulthandler.register(signum, file=stack_file, all_threads=True, chain=False)
        previous, _stack_file = _stack_file, stack_file
        if previous is not None:  # the parent's, in a forked child
            with contextlib.suppress(Exception):
                previous.close()
        _thread_map_written = None
        _registered_native_ids = {threading.get_ident(): threading.get_native_id()}
        write_thread_map()
    except Exception:
        pass


def keep_stack_dump() -> None:
    """Put the stack signal's handler back where someone reset it to the default: a framework
    that saves the handlers Python knows of and restores them later (PyTorch Lightning's signal
    connector, at the end of `fit`) sees none for this signal, which faulthandler handles in C,
    and restores "none". Nobody else then handles it, and its default would end the process."""
    if _stack_file is None or probe.directory is None:
        return
    try:
        import faulthandler
        import signal

        signum = signal.SIGRTMIN + STACK_SIGNAL_OFFSET
        with open("/proc/self/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"SigCgt:"):
                    if not int(line.split()[1], 16) >> (signum - 1) & 1:
                        # faulthandler still counts itself registered and would not install
                        # its handler again: unregister first (restoring the default, which is
                        # what is there anyway; the supervisor sends the signal only where a
                        # handler is installed).
                        faulthandler.unregister(signum)
                        faulthandler.register(signum, file=_stack_file, all_threads=True,
                                              chain=False)
                    return
    except Exception:
        pass


def write_thread_map() -> None:
    """`threads-<pid>.json`: the signal to send and each thread's pthread id -> kernel id,
    rewritten when the threads change."""
    global _thread_map_written
    if _stack_file is None or probe.directory is None:
        return
    try:
        import signal

        fixed = _registered_native_ids
        threads = {str(t.ident): fixed.get(t.ident, t.native_id) for t in threading.enumerate()
                   if t.ident is not None and getattr(t, "native_id", None) is not None}
        if threads == _thread_map_written:
            return
        pid = os.getpid()
        body = json.dumps({"pid": pid, "signal": int(signal.SIGRTMIN + STACK_SIGNAL_OFFSET),
                           "threads": threads})
        files.write_atomically(protocol.thread_map_file(pid), body)
        _thread_map_written = threads
    except Exception:
        pass


def log_exit_calls() -> None:
    """A rank that leaves the job with `sys.exit()` (a time budget's signal handler, an early
    stop on one rank) prints nothing, and its peers wait for it in their next collective: the
    line that exited is the answer. So `sys.exit` is wrapped: a call from the main thread notes
    its caller's file, line and function in the status, then exits exactly as before."""
    import sys

    try:
        original = sys.exit
        if shared.is_wrapper(original):
            return

        def exit(*args):  # type: ignore[no-untyped-def]
            _note_exit_call()
            return original(*args)

        exit.__doc__ = original.__doc__
        shared.mark_wrapper(exit)
        sys.exit = exit
    except Exception:
        pass


def _note_exit_call() -> None:
    try:
        import sys

        if threading.current_thread() is not threading.main_thread():
            return  # SystemExit ends only that thread
        caller = sys._getframe(2)  # 0: this, 1: the wrapper, 2: who called sys.exit()
        code = caller.f_code
        shared.status.exit_call = (
            code.co_filename, caller.f_lineno, getattr(code, "co_qualname", code.co_name))
    except Exception:
        pass


def log_process_ends() -> None:
    """A process ended with `Process.terminate()` or `kill()` while it held a shared lock, sat
    in a barrier or was to put a result leaves the others waiting for it forever, and the line
    that ended it is the answer; by the time of the hang that call has long returned. So
    multiprocessing's `terminate` and `kill` are wrapped: the call is noted (target pid, signal,
    the caller's file and line) in `ended-<pid>.txt`, then made exactly as before."""
    try:
        from multiprocessing import process as mp_process

        base = mp_process.BaseProcess
        for name, signal_name in (("terminate", "SIGTERM"), ("kill", "SIGKILL")):
            original = getattr(base, name, None)
            if original is None or shared.is_wrapper(original):
                continue
            setattr(base, name, _ending(original, signal_name))
    except Exception:
        pass


def _ending(original, signal_name: str):  # type: ignore[no-untyped-def]
    def ending(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        _note_process_end(self, signal_name)
        return original(self, *args, **kwargs)

    ending.__name__ = original.__name__
    ending.__qualname__ = original.__qualname__
    ending.__doc__ = original.__doc__
    shared.mark_wrapper(ending)
    return ending


def _note_process_end(target: object, signal_name: str) -> None:
    try:
        import sys

        pid = getattr(target, "pid", None)
        if probe.directory is None or pid is None:
            return
        caller = sys._getframe(2)  # 0: this, 1: the wrapper, 2: who called terminate()
        fields = [str(pid), signal_name, *_frame_fields(caller)]
        own = _own_code_caller(caller)  # a library's cleanup reached from the job's own line
        if own is not None and own is not caller:
            fields += _frame_fields(own)
        _append_line(protocol.ended_file(os.getpid()), "\t".join(fields) + "\n")
    except Exception:
        pass


def _frame_fields(frame: FrameType) -> list[str]:
    code = frame.f_code
    return [code.co_filename, str(frame.f_lineno), getattr(code, "co_qualname", code.co_name)]


def _own_code_caller(frame: FrameType | None) -> FrameType | None:
    """The innermost frame outside the standard library and installed packages: the job's own
    line that led to the call (`with Pool(...)`'s end, whose __exit__ terminates the workers)."""
    import sysconfig

    paths = sysconfig.get_paths()
    folders = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    folders.append(os.path.dirname(__file__))  # hangdoctor's own bootstrap
    library = tuple(os.path.join(os.path.realpath(folder), "") for folder in folders)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<") and not os.path.realpath(name).startswith(library):
            return frame
        frame = frame.f_back
    return None


def _append_line(name: str, line: str) -> None:
    """Append one line to the status directory's file `name` (one write, so lines from
    several threads do not interleave)."""
    assert probe.directory is not None
    path = os.path.join(probe.directory, name)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, files.FILE_MODE)
    try:
        os.write(descriptor, line.encode("utf-8", errors="replace"))
    finally:
        os.close(descriptor)


#: Off-loop call sites noted, at most: each is written once, so a hot loop costs one write.
_MAX_OFFLOOP_SITES = 16
_offloop_seen: set[tuple[str, int]] = set()


def log_offloop_calls() -> None:
    """A thread that completes an asyncio future (`set_result`) or calls `loop.call_soon`
    from outside the loop's thread schedules the wake-up without waking the loop: a loop
    asleep in its selector with no timer left never runs it, and the awaiting task waits for
    ever. Only `call_soon_threadsafe` wakes it. By the hang the call has long returned, so
    `BaseEventLoop.call_soon` is wrapped: a call from a thread that is not the running loop's
    is noted once per line (`offloop-<pid>.txt`), then made exactly as before."""
    try:
        import sys

        base_events = sys.modules.get("asyncio.base_events")
        if base_events is None:
            return
        original = base_events.BaseEventLoop.call_soon
        if shared.is_wrapper(original):
            return
        get_ident = threading.get_ident

        def call_soon(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            owner = getattr(self, "_thread_id", None)
            if owner is not None and owner != get_ident():
                _note_offloop_call()
            return original(self, *args, **kwargs)

        call_soon.__name__ = original.__name__
        call_soon.__qualname__ = original.__qualname__
        call_soon.__doc__ = original.__doc__
        shared.mark_wrapper(call_soon)
        base_events.BaseEventLoop.call_soon = call_soon
    except Exception:
        pass


def _note_offloop_call() -> None:
    try:
        import sys

        if probe.directory is None or len(_offloop_seen) >= _MAX_OFFLOOP_SITES:
            return
        caller = sys._getframe(2)  # 0: this, 1: the wrapper, 2: who called call_soon()
        code = caller.f_code
        site = (code.co_filename, caller.f_lineno)
        if site in _offloop_seen:
            return
        _offloop_seen.add(site)
        name = getattr(code, "co_qualname", code.co_name)
        thread = threading.current_thread().name.replace("\t", " ")
        line = f"{thread}\t{code.co_filename}\t{caller.f_lineno}\t{name}\n"
        _append_line(protocol.offloop_file(os.getpid()), line)
    except Exception:
        pass
