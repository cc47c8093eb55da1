"""What a thread parked in native code waits on, read from its native frames (`--native`): the
synchronisation primitive of the runtime (absl's and TSL's Notification, BlockingCounter,
CondVar and Mutex, a C++ or pthread condition variable, Eigen's pool), the runtime function that
called it, and for a few known callers what that wait means (JAX's coordination service, a
tf.data pipeline, an idle pool worker).

XLA and TensorFlow keep many threads parked this way; without this, each reads as an unknown
futex. Names are matched after the inline namespaces (`absl::lts_20250814::`), template
arguments and parameter lists are dropped, so that one table serves every build.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import N_, _

_INLINE_NAMESPACE = re.compile(r"::lts_\d+|::__\d+|::__cxx11")

#: The ends of the primitives' names: what a parked thread waits in.
_PRIMITIVE_ENDS = (
    "Notification::WaitForNotification",
    "Notification::WaitForNotificationWithTimeout",
    "Notification::WaitForNotificationWithDeadline",
    "BlockingCounter::Wait",
    "CondVar::Wait",
    "CondVar::WaitCommon",
    "CondVar::WaitWithTimeout",
    "CondVar::WaitWithDeadline",
    "Mutex::Await",
    "Mutex::AwaitCommon",
    "Mutex::Lock",
    "Mutex::LockSlow",
    "Mutex::LockSlowWithDeadline",
    "Mutex::LockWhen",
    "Mutex::ReaderLock",
    "condition_variable::wait",
    "condition_variable::wait_for",
    "condition_variable::wait_until",
    "mutex::lock",
    "EventCount::CommitWait",
    "BlockUntilReady",
    "_State_baseV2::wait",
    "nsync_cv_wait",
    "nsync_cv_wait_with_deadline",
    "nsync_mu_lock",
    "nsync_mu_semaphore_p",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "pthread_cond_clockwait",
)
#: Frames that are part of the primitive's own machinery, below the caller.
_MACHINERY = (
    "absl::",
    "AbslInternal",
    "tsl::mutex",
    "tsl::condition_variable",
    "nsync::",
    "std::",
    "__gthread",
    "__pthread",
    "pthread_",
    "syscall",
    "futex",
    "__futex",
    "__GI_",
    "__lll_",
    "Eigen::EventCount",
)

#: Known callers: parts of a name, and what a wait under a frame with one of them means. The
#: frame nearest the primitive that has one decides.
_CONTEXTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("CoordinationServiceAgent::Connect",),
        N_(
            "connecting to JAX's coordination service (jax.distributed.initialize): a process "
            "of the job has not joined"
        ),
    ),
    (
        ("CoordinationServiceAgent::WaitAtBarrier", "CoordinationServiceAgent::Barrier"),
        N_("at a barrier of JAX's coordination service, waiting for the other processes"),
    ),
    (
        ("CoordinationServiceAgent::GetKeyValue", "CoordinationServiceAgent::BlockingKeyValueGet"),
        N_("waiting for a key in JAX's coordination service that another process has not set"),
    ),
    (("tensorflow::data::",), N_("waiting for the next element of a tf.data pipeline")),
    (("ThreadPoolTempl", "WaitForWork"), N_("an idle thread-pool worker waiting for work")),
    (
        ("Collective", "gloo::", "AllReduce", "AllGather"),
        N_("inside a cross-process collective, waiting for the other processes"),
    ),
    (("BlockUntilReady", "PjRtFuture", "::Await"), N_("waiting for an XLA computation to finish")),
)


@dataclass(frozen=True)
class NativeWait:
    """A thread parked in a runtime's synchronisation primitive."""

    primitive: str  # as the frame names it, e.g. `absl::Notification::WaitForNotification`
    caller: str | None  # the runtime function that waits in it
    meaning: str | None  # what that wait is, for a known caller (untranslated)

    @property
    def summary(self) -> str:
        """In words, for the report's `waiting_on`."""
        where = self.caller or self.primitive
        if self.meaning is not None:
            return _(
                "{meaning} (native: {primitive} in {caller})",
                meaning=_(self.meaning),
                primitive=self.primitive,
                caller=where,
            )
        return _(
            "waiting in {primitive} (native, in {caller})", primitive=self.primitive, caller=where
        )


def native_name(frame: Frame) -> str:
    """A native frame's function without inline namespaces, template arguments or parameters:
    `absl::lts_20250814::CondVar::WaitCommon(...)` -> `absl::CondVar::WaitCommon`."""
    name = frame.function.replace("(anonymous namespace)", "{anonymous}").split("(", 1)[0]
    depth, kept = 0, []
    for char in name:
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            kept.append(char)
    return _INLINE_NAMESPACE.sub("", "".join(kept)).strip()


def _primitive(name: str) -> bool:
    return name.endswith(_PRIMITIVE_ENDS)


def _machinery(name: str) -> bool:
    return not name or name.startswith(_MACHINERY) or name.startswith("0x")


def native_wait(frames: Sequence[Frame]) -> NativeWait | None:
    """The runtime wait the innermost native frames (innermost first, up to the first Python
    frame) are parked in, or None: the thread must be inside the primitive, under nothing but
    its machinery (a thread that computes in a function of its own is not waiting)."""
    native: list[str] = []
    for frame in frames:
        if not frame.native:
            break
        native.append(native_name(frame))
    primitive_at = None
    for index, name in enumerate(native):
        if _primitive(name):
            primitive_at = index
        elif not _machinery(name):
            break
    if primitive_at is None:
        return None
    outward = native[primitive_at + 1 :]
    caller = next((n for n in outward if not _machinery(n) and not _primitive(n)), None)
    meaning = next(
        (
            words
            for name in native[primitive_at:]
            for parts, words in _CONTEXTS
            if any(part in name for part in parts)
        ),
        None,
    )
    return NativeWait(native[primitive_at], caller, meaning)
