"""HD103 native.blocked: Python's own blocking calls release the GIL; a thread blocked in the
kernel while it owns the GIL is inside native code that did not, and every other Python thread
waits for it."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.evidence.model import Frame, ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.base import Deferral, Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words
from hangdoctor.taxonomy import Category

_RUNTIME_LIBRARIES = ("libc.so", "libpthread", "ld-linux", "libpython", "libffi", "python3")


def _native_frames(thread: ThreadEvidence) -> list[Frame]:
    """Native frames above the innermost Python frame (present with --native)."""
    frames = []
    for frame in frames_of(thread):
        if not frame.native:
            break
        frames.append(frame)
    return frames


# A thread blocked in the kernel uses no CPU; one that used more than this share of a core
# between the snapshots was computing, however it looked at the one moment py-spy read it.
_BLOCKED_MAX_SHARE = 0.1


def _computing(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> bool:
    """Caught asleep with the GIL between two bursts of work: torch's operators join their
    intra-op threads on a futex with the GIL held, many times a second. A thread that used CPU
    between the snapshots, or ran in one of them, computes; it is not blocked. So does one that
    py-spy found running (active) as it read the stack: /proc's state was read a moment
    earlier, and a loop that sleeps between bursts of Python (a launcher's monitor) is caught
    asleep there and holding the GIL here."""
    if thread.python is not None and thread.python.active:
        return True
    share = job.thread_cpu_share(process.pid, thread.tid)
    if share is not None and share >= _BLOCKED_MAX_SHARE:
        return True
    return any(
        sample.kernel is not None and sample.kernel.state == "R"
        for _elapsed, sample in job.samples(process.pid, thread.tid)
    )


def _first_python(thread: ThreadEvidence) -> Frame | None:
    return next((f for f in frames_of(thread) if not f.native), None)


class NativeBlocked(Rule):
    """a thread stuck in native code, holding the GIL

    Fires when: a thread holds the GIL while blocked inside native code, starving every other Python
    thread

    Why: Python's own blocking calls release the global interpreter lock while they wait; a C/C++
    extension, custom op or ctypes function that blocks in the kernel without releasing it keeps it.
    Every other Python thread of the process (DataLoader pin-memory threads, heartbeats, logging,
    the watchdog) then waits for the GIL, so the whole process freezes behind one native call.

    Instead: Release the GIL around blocking native work (`Py_BEGIN_ALLOW_THREADS`,
    `py::gil_scoped_release` in pybind11, `nogil` in Cython), give the blocking call a timeout, and
    look at the native frames with `hangdoctor dump PID --native`.
    """

    id = "HD103"
    category = Category.NATIVE_BLOCKED
    reads = "capture"
    specificity = 70
    defers_to = (
        Deferral(
            frozenset({"HD209", "HD451"}),
            why=(
                "the thread is a forked child's, asleep in a native thread pool that fork did "
                "not copy: those rules say why it never returns, where this one says only that "
                "it holds the GIL meanwhile"
            ),
            same_process=True,
        ),
    )

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            for thread in process.threads:
                python = thread.python
                kernel = thread.kernel
                if python is None or kernel is None or not python.owns_gil:
                    continue
                if kernel.state not in ("S", "D") or _computing(job, process, thread):
                    continue
                # With the GIL taken, another Python thread found in a futex wait or on the CPU
                # (take_gil wakes every switch interval to ask for it) is waiting for the GIL.
                starved = [
                    t
                    for t in process.threads
                    if t is not thread
                    and t.python is not None
                    and t.kernel is not None
                    and (t.kernel.syscall_name == "futex" or t.kernel.state == "R")
                ]
                yield self._finding(job, process, thread, starved)

    def _finding(
        self,
        job: JobView,
        process: ProcessEvidence,
        thread: ThreadEvidence,
        starved: list[ThreadEvidence],
    ) -> Finding:
        python_frame = _first_python(thread)
        native = _native_frames(thread)
        called = next(
            (f for f in native if not any(lib in f.file for lib in _RUNTIME_LIBRARIES)), None
        )
        evidence = [
            _(
                "{thread} owns the GIL (py-spy) while blocked in the kernel ({kernel})",
                thread=thread_label(thread),
                kernel=kernel_words(thread),
            ),
            _("its innermost Python line is {place}", place=at(python_frame)),
        ]
        if native:
            evidence.append(
                _(
                    "native frames, innermost first: {frames}",
                    frames=" <- ".join(
                        f"{f.function} ({f.file.rsplit('/', 1)[-1]})" for f in native[:6]
                    ),
                )
            )
        if starved:
            evidence.append(
                _(
                    "{count} other thread(s) wait and cannot run Python: {threads}",
                    count=len(starved),
                    threads=", ".join(thread_label(t) for t in starved[:8]),
                )
            )
        where = short_location(python_frame) if python_frame else _("its current line")
        target = (
            _(
                " ({function} in {file})",
                function=called.function,
                file=called.file.rsplit("/", 1)[-1],
            )
            if called
            else ""
        )
        fixes = [
            _(
                "The native function called at {where}{target} blocks without releasing the "
                "GIL: wrap the blocking part in Py_BEGIN_ALLOW_THREADS / Py_END_ALLOW_THREADS "
                "(C), py::gil_scoped_release or py::call_guard<py::gil_scoped_release>() "
                "(pybind11), or nogil (Cython).",
                where=where,
                target=target,
            ),
            _(
                "With ctypes, load the library with ctypes.CDLL (releases the GIL) rather than "
                "ctypes.PyDLL or ctypes.pythonapi."
            ),
            _(
                "Find out what the native call waits for: `hangdoctor dump --native PID` shows "
                "the native frames, `gdb -p PID` the rest."
            ),
        ]
        return self.finding(
            confidence=Confidence.CERTAIN if starved else Confidence.FAIR,
            title=_(
                "Stuck in native code holding the GIL at {where}; {count} other thread(s) starved",
                where=where,
                count=len(starved),
            )
            if starved
            else _("Stuck in native code holding the GIL at {where}", where=where),
            explanation=_(
                "A call into native code (a C/C++ extension, a custom op, a ctypes function) "
                "is blocked inside the kernel while holding Python's global interpreter lock. "
                "No other thread of this process can run Python code until it returns."
            ),
            culprit=culprit(job, process, thread),
            evidence=tuple(evidence),
            fixes=tuple(fixes),
        )
