"""Threads parked in XLA's and TensorFlow's native waits are named as those waits. The frames
are those py-spy --native read here from hung jobs (jax 0.10.2, tensorflow 2.21 on CPU): the
main thread of `jax.distributed.initialize` waiting for a process that never came, and of a
`for` loop over a prefetched tf.data pipeline whose generator blocks."""

from __future__ import annotations

from hangdoctor.analysis.native_waits import native_name, native_wait
from hangdoctor.evidence.model import Frame

JAXLIB = "/venv/lib/python3.11/site-packages/jaxlib/libjax_common.so"
TF = "/venv/lib/python3.11/site-packages/tensorflow/libtensorflow_framework.so.2"
TF_CC = "/venv/lib/python3.11/site-packages/tensorflow/libtensorflow_cc.so.2"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def _native(library: str, *names: str) -> list[Frame]:
    return [Frame(function=name, file=library, line=0, native=True) for name in names]


def _python(file: str, function: str, line: int) -> Frame:
    return Frame(function=function, file=file, line=line)


JAX_CONNECT = (
    *_native(LIBC, "syscall"),
    *_native(
        JAXLIB,
        "absl::lts_20260107::synchronization_internal::FutexWaiter::WaitUntil",
        "absl::lts_20260107::synchronization_internal::FutexWaiter::Wait",
        "AbslInternalPerThreadSemWait_lts_20260107",
        "absl::lts_20260107::Mutex::Block",
        "absl::lts_20260107::Mutex::LockSlowWithDeadline",
        "absl::lts_20260107::Notification::WaitForNotification",
        "xla::CoordinationServiceAgent::Connect",
        "xla::DistributedRuntimeCoordinationServiceClient::Connect",
        "nanobind::detail::nb_func_vectorcall_simple_1",
    ),
    _python("/venv/lib/python3.11/site-packages/jax/_src/distributed.py", "initialize", 173),
    _python("/job/train.py", "<module>", 3),
)

TF_PREFETCH = (
    *_native(LIBC, "syscall"),
    *_native(
        TF,
        "absl::lts_20250814::synchronization_internal::FutexWaiter::WaitUntil",
        "absl::lts_20250814::synchronization_internal::FutexWaiter::Wait",
        "AbslInternalPerThreadSemWait_lts_20250814",
        "absl::lts_20250814::CondVar::WaitCommon",
    ),
    *_native(TF_CC, "tensorflow::data::PrefetchDatasetOp::Dataset::Iterator::GetNextInternal"),
    *_native(TF, "tensorflow::data::DatasetBaseIterator::GetNext"),
    *_native(TF_CC, "tensorflow::data::IteratorGetNextOp::DoCompute", "TFE_Execute"),
    Frame(function="0x13839cd68", file="?", line=0, native=True),
    _python(
        "/venv/lib/python3.11/site-packages/tensorflow/python/ops/gen_dataset_ops.py",
        "iterator_get_next",
        3081,
    ),
    _python("/job/train.py", "<module>", 10),
)


def test_joining_jax_s_coordination_service_is_named() -> None:
    wait = native_wait(JAX_CONNECT)
    assert wait is not None
    assert wait.primitive == "absl::Notification::WaitForNotification"
    assert wait.caller == "xla::CoordinationServiceAgent::Connect"
    assert "coordination service" in wait.summary and "has not joined" in wait.summary


def test_a_tf_data_prefetch_wait_is_named() -> None:
    wait = native_wait(TF_PREFETCH)
    assert wait is not None
    assert wait.primitive == "absl::CondVar::WaitCommon"
    assert wait.caller == "tensorflow::data::PrefetchDatasetOp::Dataset::Iterator::GetNextInternal"
    assert wait.summary.startswith("waiting for the next element of a tf.data pipeline")


def test_an_unknown_caller_still_names_the_primitive() -> None:
    frames = (
        *_native(LIBC, "__futex_abstimed_wait_common", "pthread_cond_wait"),
        *_native("/opt/lib/libsolver.so", "solver::Pool::Drain(int)"),
        _python("/job/solve.py", "main", 4),
    )
    wait = native_wait(frames)
    assert wait is not None and wait.primitive == "pthread_cond_wait"
    assert wait.caller == "solver::Pool::Drain" and wait.meaning is None
    assert wait.summary == "waiting in pthread_cond_wait (native, in solver::Pool::Drain)"


def test_a_thread_that_computes_is_not_waiting() -> None:
    frames = (
        *_native(TF, "Eigen::internal::TensorExecutor::run"),
        *_native(TF, "absl::lts_20250814::Mutex::Lock"),  # outward: not where it is now
    )
    assert native_wait(frames) is None
    assert native_wait([_python("/job/train.py", "<module>", 3)]) is None
    assert native_wait([]) is None


def test_names_lose_inline_namespaces_templates_and_parameters() -> None:
    frame = Frame(
        function="Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WaitForWork(Eigen::"
        "EventCount::Waiter*, Task*)",
        file=TF,
        line=0,
        native=True,
    )
    assert native_name(frame) == "Eigen::ThreadPoolTempl::WaitForWork"
    anonymous = Frame(
        function="tensorflow::(anonymous namespace)::EagerLocalExecute",
        file=TF,
        line=0,
        native=True,
    )
    assert native_name(anonymous) == "tensorflow::{anonymous}::EagerLocalExecute"
