"""Self-tests (the guide's hardware isolation): a training step on the CPU, the same on each GPU
alone, an all-reduce across the local devices. A self-test that hangs is itself diagnosed: what
hangs alone tells where to look."""

from __future__ import annotations

from hangdoctor.doctor.facts import Facts, SelftestResult
from hangdoctor.doctor.result import CheckResult

#: (id, title, what a hang or failure of this test points at, what to try).
_KINDS: dict[str, tuple[str, str, str, str]] = {
    "cpu_step": (
        "DR701", "Training step on the CPU",
        "A step that hangs on the CPU alone rules out GPUs and the network: the framework "
        "install, its thread pools (OpenMP/MKL) or a native library is at fault.",
        "OMP_NUM_THREADS=1 python -c 'import torch; print(torch.ones(2) @ torch.ones(2))'; "
        "reinstall torch in a fresh virtual environment"),
    "gloo_allreduce": (
        "DR702", "All-reduce of 2 CPU ranks (gloo, loopback)",
        "Two local ranks that cannot all-reduce over loopback point at the host's networking "
        "(a firewall on lo, a hostname that resolves to an unreachable address) or the "
        "torch.distributed install.",
        "export GLOO_SOCKET_IFNAME=lo; check `getent hosts $(hostname)` resolves to a local "
        "address"),
    "gpu_step": (
        "DR703", "Training step on one GPU",
        "A step that works on the CPU but hangs on one GPU alone points at that GPU, its "
        "driver or its PCIe link.",
        "nvidia-smi -q -i <index>; sudo dmesg -T | grep -i xid; reset the GPU "
        "(`sudo nvidia-smi -r -i <index>`) or drain the node"),
    "nccl_allreduce": (
        "DR704", "All-reduce across the local GPUs (NCCL)",
        "GPUs that work alone but hang together point at peer-to-peer paths (NVLink, PCIe "
        "ACS/IOMMU) or NCCL's configuration.",
        "NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 hangdoctor doctor --selftest   (if that passes, "
        "check ACS: `sudo lspci -vvv | grep ACSCtl`, and `nvidia-smi topo -m`)"),
    "script": (
        "DR705", "Self-test script",
        "The script given to --selftest-script did not finish in time.",
        "Run it under `hangdoctor run -- python <script>`"),
}


def _one(test: SelftestResult) -> CheckResult:
    kind, _, suffix = test.name.partition(":")
    id, title, diagnosis, fix = _KINDS.get(kind, _KINDS["script"])
    if suffix:
        title = f"{title} ({suffix})"
        fix = fix.replace("<index>", suffix)
    timing = f"{test.duration_s:.1f} s"
    if test.status == "passed":
        extra = f"; {test.message}" if test.message else ""
        return CheckResult(id=id, area="selftest", status="ok", title=title,
                           found=f"passed in {timing}{extra}",
                           wanted=f"done within {test.timeout_s:g} s")
    if test.status == "skipped":
        return CheckResult(id=id, area="selftest", status="skipped", title=title,
                           found=f"skipped: {test.message}")
    if test.status == "hung":
        where = (" at " + " <- ".join(test.where[:3])) if test.where else \
            " (its stack could not be read)"
        return CheckResult(
            id=id, area="selftest", status="problem", title=f"{title} hung",
            found=f"no result after {timing}, stuck{where}",
            wanted=f"done within {test.timeout_s:g} s",
            why=f"{diagnosis} {test.message}".strip(), fix=fix)
    return CheckResult(id=id, area="selftest", status="problem", title=f"{title} failed",
                       found=f"failed after {timing}: {test.message}",
                       wanted="passes", why=diagnosis, fix=fix)


def check(facts: Facts) -> list[CheckResult]:
    """Self-test results; nothing when --selftest was not asked for."""
    return [_one(test) for test in facts.selftests or ()]
