"""GPUs through NVML: memory and utilisation, ECC, retired pages and remapped rows, PCIe link
against its maximum, replay counter, clock-event reasons, processes sharing a GPU.

No GPU is a fact, not an error. The examples are GPUs described field by field as NVML reads
them; tests/doctor/fixtures/nvml_readings.json has whole readings in nvidia-ml-py's shape.
"""

from __future__ import annotations

from collections.abc import Iterator

from hangdoctor.doctor.check import Check, Example, GpuCheck
from hangdoctor.doctor.examples import node
from hangdoctor.doctor.facts import Facts, GpuDevice, GpuProcess, Gpus
from hangdoctor.doctor.result import CheckResult
from hangdoctor.doctor.units import GIB, size
from hangdoctor.evidence.model import ProbeError
from hangdoctor.i18n import N_, _

NVML_SOURCE = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html"
RETIREMENT_SOURCE = "https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html"
REMAPPING_SOURCE = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"

#: nvmlClocksEventReason* bits that mean the GPU is slowed by heat or power delivery (the
#: software power cap, 0x4, is normal under load and not listed).
CLOCK_EVENTS = {
    0x8: N_("hardware slowdown"),
    0x20: N_("software thermal slowdown"),
    0x40: N_("hardware thermal slowdown"),
    0x80: N_("hardware power brake"),
}
MEMORY_BUSY = 0.9
REPLAY_WARN = 100

#: A healthy, idle GPU as NVML reads it; the examples change a few fields.
IDLE_GPU = GpuDevice(
    index=0,
    name="NVIDIA H100 80GB HBM3",
    uuid="GPU-5d0f3a1e",
    pci_bus_id="00000000:1B:00.0",
    memory_used_bytes=1 * GIB // 2,
    memory_total_bytes=80 * GIB,
    utilization_gpu_percent=0,
    ecc_uncorrected_volatile=0,
    ecc_uncorrected_aggregate=0,
    ecc_corrected_volatile=0,
    retired_pages_pending=False,
    retired_pages_count=0,
    remapped_rows_pending=False,
    remapped_rows_failure=False,
    pcie_gen=5,
    pcie_gen_max=5,
    pcie_width=16,
    pcie_width_max=16,
    pcie_replay_counter=0,
    clock_event_reasons=0x1,
    temperature_c=34,
)


def _gpu(**fields: object) -> Facts:
    """A node with one GPU: the idle one with `fields` changed."""
    device = GpuDevice.model_validate({**IDLE_GPU.model_dump(), **fields})
    return node(versions={"driver": "550.54.15"}, gpus=Gpus(available=True, devices=(device,)))


def _name(gpu: GpuDevice) -> str:
    return f"GPU {gpu.index}"


class GpusSeen(Check):
    """GPUs seen through NVML; no GPU is `info`; a driver without NVML readings is `warn`

    Why: Without NVML readings, ECC errors, failing PCIe links, slowed clocks and other processes on
    a GPU go unseen, and these are common causes of a rank that hangs or straggles. A node with no
    GPU is a fact, not an error.

    Instead: Install NVML's Python binding (`pip install 'hangdoctor[gpu]'`, which brings
    nvidia-ml-py) and check that `nvidia-smi` works on the node.
    """

    id = "DR500"
    area = "gpu"
    fires_on = (
        Example(
            "a driver, but NVML cannot be read",
            lambda: node(
                versions={"driver": "550.54.15"},
                gpus=Gpus(
                    failure=ProbeError(
                        probe="nvml", kind="missing_tool", message="nvidia-ml-py is not installed"
                    )
                ),
            ),
            "warn",
        ),
        Example(
            "NVML does not answer (a wedged driver)",
            lambda: node(
                gpus=Gpus(
                    failure=ProbeError(probe="nvml", kind="timeout", message="no answer within 8 s")
                )
            ),
            "warn",
        ),
    )
    quiet_on = (
        Example("a CPU node", lambda: node(), "info"),
        Example("one GPU", lambda: _gpu(), "ok"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        gpus = facts.gpus
        if gpus.available:
            yield self.result(
                "ok",
                _("GPUs"),
                found=", ".join(f"{d.index}: {d.name or '?'}" for d in gpus.devices) or _("none"),
            )
            return
        driver = facts.versions.driver or facts.libraries.driver_module
        failure = gpus.failure
        if failure is not None and (driver or failure.kind == "timeout"):
            yield self.result(
                "warn",
                _("GPUs could not be read through NVML"),
                found=failure.message,
                wanted=_("NVML readings"),
                why=_("Without NVML, ECC, PCIe and clock problems of the GPUs go unseen."),
                fix=failure.help or "pip install 'hangdoctor[gpu]'   (nvidia-ml-py)",
            )
            return
        yield self.result(
            "info",
            _("No NVIDIA GPU"),
            found=failure.message if failure else _("no NVIDIA GPU or driver"),
            why=_("CPU-only node: GPU checks do not apply."),
        )


class GpuMemory(GpuCheck):
    """memory used (>= 90% before the job `warn`) and utilisation

    Why: A job started on a GPU that another process already fills stalls in allocator retries or
    fails with CUDA out of memory on one rank while the others wait for it in their next collective.

    Instead: Find the process using the GPU (`nvidia-smi -i N`) and end it, or pick another GPU with
    `CUDA_VISIBLE_DEVICES`.
    """

    id = "DR501"
    area = "gpu"
    fires_on = (
        Example("another process holds 97%", lambda: _gpu(memory_used_bytes=78 * GIB), "warn"),
    )
    quiet_on = (
        Example("idle", lambda: _gpu(), "ok"),
        Example("memory not reported", lambda: _gpu(memory_used_bytes=None), None),
    )

    def check_gpu(self, gpu: GpuDevice) -> Iterator[CheckResult]:
        used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
        if total is None or used is None:
            return
        share = used / total if total else 0.0
        percent = f"{share:.0%}"
        if gpu.utilization_gpu_percent is None:
            found = _("{used} of {total} used", used=size(used), total=size(total))
        else:
            found = _(
                "{used} of {total} used, utilisation {percent}%",
                used=size(used),
                total=size(total),
                percent=gpu.utilization_gpu_percent,
            )
        if share < MEMORY_BUSY:
            yield self.result("ok", _("{gpu}: memory and utilisation", gpu=_name(gpu)), found=found)
            return
        yield self.result(
            "warn",
            _("{gpu}: memory already {share} used", gpu=_name(gpu), share=percent),
            found=found,
            wanted=_("free before the job starts"),
            why=_(
                "A job started on a GPU that another process fills stalls in allocator "
                "retries or fails with CUDA out of memory on one rank while the others wait."
            ),
            fix=_(
                "nvidia-smi -i {index}   (find the process; end it or pick another GPU "
                "with CUDA_VISIBLE_DEVICES)",
                index=gpu.index,
            ),
        )


class UncorrectableEcc(GpuCheck):
    """uncorrectable ECC errors (volatile `problem`, aggregate `warn`)

    Why: Uncorrectable ECC errors corrupt or kill the process using that memory (Xid 48/94/95), and
    its peers hang in their next collective. Past uncorrectable errors mark a GPU whose memory is
    failing.

    Instead: Reset the GPU when idle (`sudo nvidia-smi -r -i N`) and drain the node if the errors
    recur; `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER -i N` shows the history.
    """

    id = "DR502"
    area = "gpu"
    fires_on = (
        Example(
            "since boot",
            lambda: _gpu(ecc_uncorrected_volatile=2, ecc_uncorrected_aggregate=2),
            "problem",
        ),
        Example("in its lifetime", lambda: _gpu(ecc_uncorrected_aggregate=3), "warn"),
    )
    quiet_on = (Example("none", lambda: _gpu(ecc_corrected_volatile=12), None),)

    def check_gpu(self, gpu: GpuDevice) -> Iterator[CheckResult]:
        if gpu.ecc_uncorrected_volatile:
            yield self.result(
                "problem",
                _("{gpu}: uncorrectable ECC errors since boot", gpu=_name(gpu)),
                found=str(gpu.ecc_uncorrected_volatile),
                wanted="0",
                why=_(
                    "Uncorrectable memory errors corrupt or kill the process using the "
                    "memory (Xid 48/94/95); its peers hang in their next collective."
                ),
                fix=_(
                    "sudo nvidia-smi -r -i {index}   (reset when idle); drain the node "
                    "if they recur",
                    index=gpu.index,
                ),
                source=RETIREMENT_SOURCE,
            )
        elif gpu.ecc_uncorrected_aggregate:
            yield self.result(
                "warn",
                _("{gpu}: uncorrectable ECC errors in its lifetime", gpu=_name(gpu)),
                found=str(gpu.ecc_uncorrected_aggregate),
                wanted="0",
                why=_("Past uncorrectable errors mark a GPU whose memory is failing."),
                fix=f"nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER -i {gpu.index}",
                source=RETIREMENT_SOURCE,
            )


class MemoryRepairPending(GpuCheck):
    """retired pages pending, row remapping pending or failed

    Why: A bad memory page is retired, and a faulty row remapped, only at the next GPU reset; until
    then jobs can hit it again (Xid 48/63/94/95). A GPU that has run out of spare rows (Xid 64)
    cannot repair itself any more.

    Instead: Reset the GPU when no job uses it (`sudo nvidia-smi -r -i N`); when row remapping
    failed, drain the node and have the GPU replaced.
    """

    id = "DR503"
    area = "gpu"
    fires_on = (
        Example("page retirement pending", lambda: _gpu(retired_pages_pending=True), "problem"),
        Example("row remapping failed", lambda: _gpu(remapped_rows_failure=True), "problem"),
        Example("row remapping pending", lambda: _gpu(remapped_rows_pending=True), "warn"),
    )
    quiet_on = (Example("nothing pending", lambda: _gpu(retired_pages_count=2), None),)

    def check_gpu(self, gpu: GpuDevice) -> Iterator[CheckResult]:
        name = _name(gpu)
        if gpu.retired_pages_pending:
            yield self.result(
                "problem",
                _("{gpu}: page retirement pending", gpu=name),
                found=_("pending (retired so far: {count})", count=gpu.retired_pages_count or 0),
                wanted=_("no pending retirement"),
                why=_(
                    "A bad memory page is retired only at the next GPU reset; until then "
                    "jobs can hit it again (Xid 48/63)."
                ),
                fix=_("sudo nvidia-smi -r -i {index}   (when no job uses it)", index=gpu.index),
                source=RETIREMENT_SOURCE,
            )
        if gpu.remapped_rows_failure:
            yield self.result(
                "problem",
                _("{gpu}: row remapping failed", gpu=name),
                found=_("remapping failure"),
                wanted=_("no failure"),
                why=_("The GPU has run out of spare memory rows (Xid 64): it needs replacing."),
                fix=_("Drain the node and have the GPU replaced (RMA)"),
                source=REMAPPING_SOURCE,
            )
        elif gpu.remapped_rows_pending:
            yield self.result(
                "warn",
                _("{gpu}: row remapping pending", gpu=name),
                found=_("pending"),
                wanted=_("no pending remapping"),
                why=_(
                    "A faulty memory row is remapped only at the next GPU reset; until "
                    "then jobs can hit it (Xid 63/94/95)."
                ),
                fix=_("sudo nvidia-smi -r -i {index}   (when no job uses it)", index=gpu.index),
                source=REMAPPING_SOURCE,
            )


class PcieLink(GpuCheck):
    """PCIe link generation/width against the maximum (narrower `warn`; lower generation at idle
    `info`)

    Why: A PCIe link trained at reduced width or generation (a bad seat, riser or slot) cuts host
    transfers and collectives that go through the host; that rank becomes the straggler its peers
    wait for in every collective. Idle GPUs lower their link generation to save power, which is
    normal.

    Instead: Check the link under load (`sudo lspci -vv -s <bus id> | grep -E 'LnkCap|LnkSta'`);
    reseat the GPU or riser and check the slot and BIOS PCIe settings.
    """

    id = "DR504"
    area = "gpu"
    fires_on = (
        Example("gen4 x8 of gen4 x16", lambda: _gpu(pcie_gen=4, pcie_width=8), "warn"),
        Example(
            "gen3 of gen5 under load", lambda: _gpu(pcie_gen=3, utilization_gpu_percent=95), "warn"
        ),
    )
    quiet_on = (
        Example("full speed", lambda: _gpu(), "ok"),
        # Idle GPUs lower their link generation to save power.
        Example("gen1 at idle", lambda: _gpu(pcie_gen=1), "info"),
        Example("link not reported", lambda: _gpu(pcie_gen=None), None),
    )

    def check_gpu(self, gpu: GpuDevice) -> Iterator[CheckResult]:
        gen, gen_max, width, width_max = (
            gpu.pcie_gen,
            gpu.pcie_gen_max,
            gpu.pcie_width,
            gpu.pcie_width_max,
        )
        if gen is None or gen_max is None or width is None or width_max is None:
            return
        name, found, wanted = _name(gpu), f"gen{gen} x{width}", f"gen{gen_max} x{width_max}"
        fix = _(
            "sudo lspci -vv -s {bus} | grep -E 'LnkCap|LnkSta'; "
            "reseat the GPU or riser, check the slot and BIOS PCIe settings",
            bus=gpu.pci_bus_id or "<bus id>",
        )
        if width < width_max:
            yield self.result(
                "warn",
                _("{gpu}: PCIe link narrower than it can be", gpu=name),
                found=found,
                wanted=wanted,
                why=_(
                    "A link trained at reduced width (a bad seat, riser or slot) cuts host "
                    "transfers and collectives through the host; that rank becomes the "
                    "straggler its peers wait for."
                ),
                fix=fix,
            )
        elif gen < gen_max:
            busy = (gpu.utilization_gpu_percent or 0) > 0
            yield self.result(
                "warn" if busy else "info",
                _("{gpu}: PCIe link below its maximum generation", gpu=name),
                found=found,
                wanted=wanted,
                why=(
                    _(
                        "Under load the link should run at its maximum generation; a lower one "
                        "slows transfers."
                    )
                    if busy
                    else _(
                        "Idle GPUs lower their link generation to save power: this is normal at "
                        "idle; rerun doctor while a job runs to be sure."
                    )
                ),
                fix=fix,
            )
        else:
            yield self.result("ok", _("{gpu}: PCIe link", gpu=name), found=found, wanted=wanted)


class PcieReplays(GpuCheck):
    """PCIe replay counter (>= 100 `warn`)

    Why: Each PCIe replay is a transfer resent after a link error. Many of them point at a failing
    link, slow that GPU's transfers, and precede bus errors (Xid 79) that take the GPU off the bus
    mid-job.

    Instead: Inspect the link (`sudo lspci -vv -s <bus id>`), reseat the card and check the riser;
    drain the node if the counter keeps climbing.
    """

    id = "DR505"
    area = "gpu"
    fires_on = (Example("412 replays", lambda: _gpu(pcie_replay_counter=412), "warn"),)
    quiet_on = (
        Example("a few replays", lambda: _gpu(pcie_replay_counter=3), "info"),
        Example("none", lambda: _gpu(), None),
    )

    def check_gpu(self, gpu: GpuDevice) -> Iterator[CheckResult]:
        replays = gpu.pcie_replay_counter
        if not replays:
            return
        yield self.result(
            "warn" if replays >= REPLAY_WARN else "info",
            _("{gpu}: PCIe replays", gpu=_name(gpu)),
            found=str(replays),
            wanted=f"< {REPLAY_WARN}",
            why=_(
                "Each replay is a PCIe transfer resent after an error; many of them point at a "
                "failing link and precede bus errors (Xid 79)."
            ),
            fix=_(
                "sudo lspci -vv -s {bus}; reseat the card, check the riser",
                bus=gpu.pci_bus_id or "<bus id>",
            ),
        )


class ClocksSlowed(GpuCheck):
    """clock-event reasons: hardware slowdown, thermal, power brake

    Why: A GPU slowed by heat, power delivery or a hardware slowdown makes its rank the straggler:
    the others wait for it in every collective, and a long enough wait passes the process group's
    timeout.

    Instead: Look at why (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i N`) and fix the
    cooling, fans or power supply; drain the node until it runs at full clocks.
    """

    id = "DR506"
    area = "gpu"
    fires_on = (
        Example(
            "thermal slowdown",
            lambda: _gpu(clock_event_reasons=0x20 | 0x40, temperature_c=91),
            "warn",
        ),
    )
    quiet_on = (
        Example("idle", lambda: _gpu(clock_event_reasons=0x1), None),
        Example(
            "held at the software power cap under load",
            lambda: _gpu(clock_event_reasons=0x4, utilization_gpu_percent=100),
            None,
        ),
    )

    def check_gpu(self, gpu: GpuDevice) -> Iterator[CheckResult]:
        reasons = gpu.clock_event_reasons
        active = [_(text) for bit, text in CLOCK_EVENTS.items() if reasons and reasons & bit]
        if reasons is None or not active:
            return
        mask = f"0x{reasons:x}"
        if gpu.temperature_c is None:
            found = _("reasons {mask}", mask=mask)
        else:
            found = _("reasons {mask}, {celsius} C", mask=mask, celsius=gpu.temperature_c)
        yield self.result(
            "warn",
            _("{gpu}: clocks slowed ({reasons})", gpu=_name(gpu), reasons=", ".join(active)),
            found=found,
            wanted=_("no thermal or power slowdown"),
            why=_(
                "A GPU slowed by heat or power delivery makes its rank the straggler: the "
                "others wait in every collective, and a long wait can pass a timeout."
            ),
            fix=_(
                "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {index}; check cooling, "
                "fans and power supply",
                index=gpu.index,
            ),
            source=NVML_SOURCE,
        )


class SharedGpu(GpuCheck):
    """processes on the GPU (two or more `warn`)

    Why: Processes that share a GPU compete for its memory and compute. Two ranks mapped to one GPU
    (a wrong LOCAL_RANK or CUDA_VISIBLE_DEVICES) deadlock or fail in NCCL, which forbids two ranks
    of a communicator on one device.

    Instead: Give each rank its own GPU (`torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))`),
    and end stray processes on the GPU before a job starts.
    """

    id = "DR507"
    area = "gpu"
    fires_on = (
        Example(
            "two ranks on one GPU",
            lambda: _gpu(
                processes=(
                    GpuProcess(pid=40211, name="python", used_memory_bytes=20 * GIB),
                    GpuProcess(pid=40298, name="python", used_memory_bytes=18 * GIB),
                )
            ),
            "warn",
        ),
    )
    quiet_on = (
        Example("one process", lambda: _gpu(processes=(GpuProcess(pid=40211),)), "info"),
        Example("none", lambda: _gpu(), None),
    )

    def check_gpu(self, gpu: GpuDevice) -> Iterator[CheckResult]:
        processes = gpu.processes
        if not processes:
            return
        listed = ", ".join(
            f"{p.pid}"
            + (f" {p.name}" if p.name else "")
            + (f" ({size(p.used_memory_bytes)})" if p.used_memory_bytes else "")
            for p in processes[:6]
        )
        if len(processes) < 2:
            yield self.result(
                "info",
                _("{gpu}: in use by a process", gpu=_name(gpu)),
                found=listed,
                why=_("Another job already runs on this GPU."),
            )
            return
        yield self.result(
            "warn",
            _(
                "{gpu}: {count} processes share this GPU",
                gpu=_name(gpu),
                count=len(processes),
            ),
            found=listed,
            wanted=_("one process per GPU"),
            why=_(
                "Processes that share a GPU compete for memory and compute; two ranks mapped to "
                "one GPU (a wrong LOCAL_RANK or CUDA_VISIBLE_DEVICES) deadlock in NCCL, which "
                "forbids two ranks on one device."
            ),
            fix=_(
                "Give each rank its own GPU: `torch.cuda.set_device(int(os.environ"
                "['LOCAL_RANK']))`, or end the stray process (`kill <pid>`)"
            ),
        )
