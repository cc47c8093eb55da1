"""Self-tests (the guide's hardware isolation): a training step on the CPU, the same on each GPU
alone, an all-reduce across the local devices. A self-test that hangs is itself diagnosed: what
hangs alone tells where to look.

Each check reads the self-tests of its kind (the part of the name before `:`); results come in
the order the tests ran, and nothing is said when --selftest was not asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from hangdoctor.doctor.check import Check, Example
from hangdoctor.doctor.examples import node
from hangdoctor.doctor.facts import Facts, SelftestResult, SelftestStatus
from hangdoctor.doctor.result import CheckResult
from hangdoctor.i18n import N_, _


def _ran(name: str, status: SelftestStatus, message: str = "", *where: str) -> Facts:
    """A node whose self-test `name` ended with `status`."""
    duration = 60.0 if status == "hung" else 3.2
    return node(
        selftests=(
            SelftestResult(
                name=name,
                status=status,
                duration_s=duration,
                timeout_s=60.0,
                message=message,
                where=where,
            ),
        )
    )


def _kind(test: SelftestResult) -> str:
    return test.name.partition(":")[0]


class SelftestCheck(Check):
    """The check of one kind of self-test: what its hang or failure points at, what to try."""

    area = "selftest"
    kind: ClassVar[str]
    title: ClassVar[str]
    diagnosis: ClassVar[str]
    #: What to try; `<index>` is replaced by the GPU's index for per-GPU tests.
    fix: ClassVar[str]

    def reads(self, test: SelftestResult) -> bool:
        """Whether `test` is of this check's kind."""
        return _kind(test) == self.kind

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        for test in facts.selftests or ():
            if self.reads(test):
                yield self._one(test)

    def _one(self, test: SelftestResult) -> CheckResult:
        title, fix, diagnosis = _(self.title), _(self.fix), _(self.diagnosis)
        if suffix := test.name.partition(":")[2]:
            title, fix = f"{title} ({suffix})", fix.replace("<index>", suffix)
        duration = f"{test.duration_s:.1f}"
        timing = _("{seconds} s", seconds=duration)
        limit = f"{test.timeout_s:g}"
        within = _("done within {seconds} s", seconds=limit)
        if test.status == "passed":
            found = (
                _("passed in {timing}; {message}", timing=timing, message=test.message)
                if test.message
                else _("passed in {timing}", timing=timing)
            )
            return self.result("ok", title, found=found, wanted=within)
        if test.status == "skipped":
            return self.result("skipped", title, found=_("skipped: {reason}", reason=test.message))
        if test.status == "hung":
            stuck = (
                _(
                    "no result after {timing}, stuck at {where}",
                    timing=timing,
                    where=" <- ".join(test.where[:3]),
                )
                if test.where
                else _(
                    "no result after {timing}, stuck (its stack could not be read)", timing=timing
                )
            )
            return self.result(
                "problem",
                _("{title} hung", title=title),
                found=stuck,
                wanted=within,
                why=f"{diagnosis} {test.message}".strip(),
                fix=fix,
            )
        return self.result(
            "problem",
            _("{title} failed", title=title),
            found=_("failed after {timing}: {reason}", timing=timing, reason=test.message),
            wanted=_("passes"),
            why=diagnosis,
            fix=fix,
        )


class CpuStep(SelftestCheck):
    """3 SGD steps of a small MLP on the CPU, in a child

    Why: A training step that hangs or fails on the CPU alone rules out GPUs and the network: the
    framework install, its thread pools (OpenMP, MKL) or a native library is at fault, and every job
    on this environment will hit it.

    Instead: Try the step single-threaded (`OMP_NUM_THREADS=1 python -c 'import torch;
    print(torch.ones(2) @ torch.ones(2))'`) and reinstall torch in a fresh virtual environment.
    """

    id = "DR701"
    kind = "cpu_step"
    title = N_("Training step on the CPU")
    diagnosis = N_(
        "A step that hangs on the CPU alone rules out GPUs and the network: the "
        "framework install, its thread pools (OpenMP/MKL) or a native library is at "
        "fault."
    )
    fix = N_(
        "OMP_NUM_THREADS=1 python -c 'import torch; print(torch.ones(2) @ torch.ones(2))'; "
        "reinstall torch in a fresh virtual environment"
    )
    fires_on = (
        Example(
            "hung in a thread pool",
            lambda: _ran(
                "cpu_step",
                "hung",
                "",
                "/venv/lib/python3.11/site-packages/torch/nn/functional.py:2264 in linear",
            ),
            "problem",
        ),
        Example(
            "failed", lambda: _ran("cpu_step", "failed", "ImportError: libgomp.so.1"), "problem"
        ),
    )
    quiet_on = (
        Example("passed", lambda: _ran("cpu_step", "passed", "import 2.1 s, 3 steps 0.4 s"), "ok"),
        Example(
            "torch not installed",
            lambda: _ran("cpu_step", "skipped", "torch not installed"),
            "skipped",
        ),
        Example("no --selftest", lambda: node(), None),
    )


class GlooAllreduce(SelftestCheck):
    """all-reduce of 2 gloo ranks over loopback

    Why: Two local ranks that cannot all-reduce over loopback with gloo point at the host's
    networking (a firewall on `lo`, a hostname that resolves to an unreachable address) or the
    torch.distributed install: no distributed job can start here.

    Instead: `export GLOO_SOCKET_IFNAME=lo` for the test, check that `getent hosts $(hostname)`
    resolves to a local address, and fix the firewall or `/etc/hosts`.
    """

    id = "DR702"
    kind = "gloo_allreduce"
    title = N_("All-reduce of 2 CPU ranks (gloo, loopback)")
    diagnosis = N_(
        "Two local ranks that cannot all-reduce over loopback point at the host's "
        "networking (a firewall on lo, a hostname that resolves to an unreachable "
        "address) or the torch.distributed install."
    )
    fix = N_(
        "export GLOO_SOCKET_IFNAME=lo; check `getent hosts $(hostname)` resolves to a local address"
    )
    fires_on = (
        Example(
            "hung at rendezvous",
            lambda: _ran(
                "gloo_allreduce",
                "hung",
                "",
                "pid 7: /x/distributed_c10d.py:1520 in init_process_group",
            ),
            "problem",
        ),
    )
    quiet_on = (
        Example("passed", lambda: _ran("gloo_allreduce", "passed", "2 ranks (gloo)"), "ok"),
    )


class GpuStep(SelftestCheck):
    """the CPU step on each GPU alone (`CUDA_VISIBLE_DEVICES=i`)

    Why: A step that works on the CPU but hangs or fails on one GPU alone points at that GPU, its
    driver or its PCIe link: any job that puts a rank there will hang or fail.

    Instead: Inspect that GPU (`nvidia-smi -q -i N`, `sudo dmesg -T | grep -i xid`), reset it when
    idle (`sudo nvidia-smi -r -i N`) or drain the node.
    """

    id = "DR703"
    kind = "gpu_step"
    title = N_("Training step on one GPU")
    diagnosis = N_(
        "A step that works on the CPU but hangs on one GPU alone points at that GPU, "
        "its driver or its PCIe link."
    )
    fix = N_(
        "nvidia-smi -q -i <index>; sudo dmesg -T | grep -i xid; reset the GPU "
        "(`sudo nvidia-smi -r -i <index>`) or drain the node"
    )
    fires_on = (
        Example(
            "GPU 1 fails",
            lambda: _ran("gpu_step:1", "failed", "RuntimeError: CUDA error: unknown error"),
            "problem",
        ),
    )
    quiet_on = (
        Example("GPU 0 passes", lambda: _ran("gpu_step:0", "passed"), "ok"),
        Example(
            "torch sees no GPU", lambda: _ran("gpu_step", "skipped", "torch sees no GPU"), "skipped"
        ),
    )


class NcclAllreduce(SelftestCheck):
    """NCCL all-reduce across all local GPUs

    Why: GPUs that work alone but hang together in an NCCL all-reduce point at the peer-to-peer
    paths (NVLink, PCIe ACS or the IOMMU) or NCCL's configuration: every multi-GPU job on this node
    will hang in its first collective.

    Instead: Rerun with `NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 hangdoctor doctor --selftest`; if that
    passes, disable PCIe ACS (check with `sudo lspci -vvv | grep ACSCtl`) and look at `nvidia-smi
    topo -m`.
    """

    id = "DR704"
    kind = "nccl_allreduce"
    title = N_("All-reduce across the local GPUs (NCCL)")
    diagnosis = N_(
        "GPUs that work alone but hang together point at peer-to-peer paths (NVLink, "
        "PCIe ACS/IOMMU) or NCCL's configuration."
    )
    fix = N_(
        "NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 hangdoctor doctor --selftest   (if that passes, "
        "check ACS: `sudo lspci -vvv | grep ACSCtl`, and `nvidia-smi topo -m`)"
    )
    fires_on = (Example("hung", lambda: _ran("nccl_allreduce", "hung"), "problem"),)
    quiet_on = (
        Example("passed", lambda: _ran("nccl_allreduce", "passed", "8 ranks (nccl)"), "ok"),
    )


#: The kinds the checks above read; a self-test of any other kind is the user's script.
_BUILT_IN = frozenset(c.kind for c in (CpuStep, GlooAllreduce, GpuStep, NcclAllreduce))


class Script(SelftestCheck):
    """the program given to `--selftest-script`, in a child with the same time limit

    Why: A minimal reproduction that hangs on its own, outside the full training job, narrows the
    cause to what the script does; given a time limit, the doctor says that it hangs instead of
    hanging itself.

    Instead: Run the script under `hangdoctor run -- python <script>` to capture where it waits, and
    shrink it further until the hang has one cause.
    """

    id = "DR705"
    kind = "script"
    title = N_("Self-test script")
    diagnosis = N_("The script given to --selftest-script did not finish in time.")
    fix = N_("Run it under `hangdoctor run -- python <script>`")
    fires_on = (
        Example(
            "hung on a lock",
            lambda: _ran("script:train.py", "hung", "", "train.py:12 in step"),
            "problem",
        ),
    )
    quiet_on = (
        Example("passed", lambda: _ran("script:train.py", "passed"), "ok"),
        Example("only built-in self-tests", lambda: _ran("cpu_step", "passed"), None),
    )

    def reads(self, test: SelftestResult) -> bool:
        return _kind(test) not in _BUILT_IN
