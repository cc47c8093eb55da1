"""Kernel log: NVIDIA Xid lines (what each means and what it calls for), a GPU fallen off the
bus, PCIe AER errors, the OOM killer and the hung-task detector, within the time window.

Lines are recognised by `hangdoctor.analysis.logs.scan` and Xids explained by
`hangdoctor.knowledge.xid`, so `doctor`, `dump` and `analyze` read the kernel log the same way.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from hangdoctor.analysis.logs import LogKind, LogMatch, scan
from hangdoctor.doctor.check import Check, Example
from hangdoctor.doctor.examples import node
from hangdoctor.doctor.facts import Facts, KernelLog
from hangdoctor.doctor.result import CheckResult
from hangdoctor.i18n import N_, _
from hangdoctor.knowledge.xid import APPLICATION, NODE, XIDS, Xid

XID_SOURCE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
AER_SOURCE = "https://docs.kernel.org/PCI/pcieaer-howto.html"
DRAIN = N_(
    "drain the node before the next job (Slurm: `scontrol update nodename=$(hostname -s) "
    "state=drain reason=gpu-xid`), then reset the GPU (`sudo nvidia-smi -r -i <index>`) "
    "or reboot"
)
UNKNOWN_XID = Xid(
    N_("not in hangdoctor's table"),
    NODE,
    N_("Look it up in NVIDIA's Xid catalogue and follow its resolution."),
)
#: The kinds of line these checks report; a log without any of them is clean.
REPORTED = (
    LogKind.XID,
    LogKind.GPU_LOST,
    LogKind.PCIE_ERROR,
    LogKind.OOM_KILLED,
    LogKind.HUNG_TASK,
)
_QUOTE = 160

# Lines in the wording of NVIDIA's driver and the kernel (see hangdoctor.analysis.logs), for the
# examples; tests/doctor/fixtures/dmesg_gpu_node.txt has a whole node's log.
XID_13 = (
    "NVRM: Xid (PCI:0000:65:00): 13, pid=9120, name=python3, Graphics SM Warp Exception "
    "on (GPC 0, TPC 1, SM 0): Out Of Range Address"
)
XID_79 = (
    "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
)
FELL_OFF = "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."
AER_FATAL = (
    "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
    "type=Transaction Layer, (Receiver ID)"
)
AER_CORRECTED = (
    "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"
)
OOM_KILL = (
    "Out of memory: Killed process 51234 (pt_data_worker) total-vm:48123456kB, "
    "anon-rss:30123456kB, file-rss:0kB, shmem-rss:0kB, UID:1000"
)
HUNG_TASK = "INFO: task python3:52001 blocked for more than 122 seconds."


def _log(*lines: str) -> Facts:
    return node(kernel_log={"lines": lines})


def _unreadable() -> Facts:
    return node(kernel_log={"readable": False, "lines": ()})


def _by_kind(log: KernelLog) -> dict[str, list[LogMatch]]:
    """The recognised lines by kind (`scan` caches: the checks share one pass)."""
    kinds: dict[str, list[LogMatch]] = defaultdict(list)
    if log.readable:
        for match in scan(log.lines):
            kinds[match.kind].append(match)
    return kinds


def _last(matches: list[LogMatch]) -> str:
    line = matches[-1].line
    quoted = line if len(line) <= _QUOTE else line[:_QUOTE] + "..."
    if len(matches) > 1:
        return _("{line} (and {count} more)", line=quoted, count=len(matches) - 1)
    return quoted


def _headline(meaning: str) -> str:
    """What an Xid means, up to its first colon (in either script)."""
    return meaning.split(":")[0].split("\uff1a")[0]


class KernelLogRead(Check):
    """the kernel log could be read (`skipped` with how to allow it otherwise)

    Why: NVIDIA Xid lines, PCIe errors, the OOM killer and the hung-task detector write only to the
    kernel log, and they are the only record of many hardware and memory faults behind hangs. A
    doctor that cannot read it cannot see them.

    Instead: Allow reading the kernel log (`sudo sysctl -w kernel.dmesg_restrict=0`), or run
    `hangdoctor doctor` as root or with CAP_SYSLOG.
    """

    id = "DR301"
    area = "kernel_log"
    informs_only = True
    quiet_on = (
        Example("a clean log", lambda: node(), "ok"),
        Example("dmesg_restrict", _unreadable, "skipped"),
        Example("a log with an Xid", lambda: _log(XID_13), "ok"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        log = facts.kernel_log
        if not log.readable:
            failure = log.failure
            yield self.result(
                "skipped",
                _("Kernel log could not be read"),
                found=failure.message if failure else _("unreadable"),
                why=_(
                    "Xid, PCIe, OOM-killer and hung-task lines are the only record of many "
                    "hardware and memory faults behind hangs."
                ),
                fix=(
                    failure.help
                    if failure and failure.help
                    else _(
                        "sudo sysctl -w kernel.dmesg_restrict=0   (or run as root / with "
                        "CAP_SYSLOG)"
                    )
                ),
            )
            return
        fields = {"count": len(log.lines), "source": log.source, "window": log.window}
        kinds = _by_kind(log)
        if any(kinds[kind] for kind in REPORTED):
            found = _("{count} lines from {source} (window {window})", **fields)
        else:
            found = _(
                "{count} lines from {source} (window {window}); no Xid, AER, OOM-killer or "
                "hung-task lines",
                **fields,
            )
        yield self.result("ok", _("Kernel log read"), found=found)


class XidErrors(Check):
    """one result per Xid code: application errors (13, 31, 43, 45, 68, 109) `warn`, the others
    `problem` with reset/drain

    Why: The NVIDIA driver logs each GPU fault as an Xid code. Application Xids (13, 31, 43, 45, 68,
    109) mean the GPU is healthy but a process that hit the fault is stuck or dead, and its peers
    wait for it in their next collective; the others mean the GPU or node needs attention, and jobs
    on it hang in their first CUDA call or crash.

    Instead: For an application Xid fix the kernel or index that faulted (`CUDA_LAUNCH_BLOCKING=1`,
    `compute-sanitizer`); for the others do what the Xid calls for (reset the GPU when idle with
    `sudo nvidia-smi -r -i N`, drain the node and have it checked) before running jobs there.
    """

    id = "DR302"
    area = "kernel_log"
    fires_on = (
        Example("Xid 13: the application's fault", lambda: _log(XID_13), "warn"),
        Example("Xid 79: the GPU fell off the bus", lambda: _log(XID_13, XID_79), "problem"),
    )
    quiet_on = (
        Example("no Xid", lambda: _log(AER_CORRECTED, HUNG_TASK), None),
        Example("unreadable", _unreadable, None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        by_code: dict[int, list[LogMatch]] = defaultdict(list)
        for match in _by_kind(facts.kernel_log)[LogKind.XID]:
            if (code := match.number(LogKind.XID)) is not None:
                by_code[code].append(match)
        for code in sorted(by_code):
            xid = XIDS.get(code, UNKNOWN_XID)
            devices = sorted({m.fields.get("device", "?") for m in by_code[code]})
            meaning = _(xid.meaning)
            title = _(
                "Xid {code} on {devices}: {meaning}",
                code=code,
                devices=", ".join(devices),
                meaning=_headline(meaning),
            )
            if xid.owner == APPLICATION:
                yield self.result(
                    "warn",
                    title,
                    found=_last(by_code[code]),
                    wanted=_("no Xid"),
                    why=_(
                        "{meaning}. An application error: the GPU is healthy, but the "
                        "process that hit it is stuck or dead, and its peers wait for it in "
                        "their next collective.",
                        meaning=meaning,
                    ),
                    fix=_(xid.action),
                    source=XID_SOURCE,
                )
            else:
                yield self.result(
                    "problem",
                    title,
                    found=_last(by_code[code]),
                    wanted=_("no Xid"),
                    why=_(
                        "{meaning}. The GPU or node needs attention: jobs on it hang in "
                        "their first CUDA call or collective, or crash.",
                        meaning=meaning,
                    ),
                    fix=_("{action} Then {drain}.", action=_(xid.action), drain=_(DRAIN)),
                    source=XID_SOURCE,
                )


class PcieErrors(Check):
    """PCIe AER errors: uncorrected `problem`, corrected `warn`

    Why: An uncorrected PCIe error takes the device off the bus: the GPU or NIC stops answering and
    the job hangs in its next transfer or collective. Corrected errors are retried by the link, but
    a flood of them slows transfers and often precedes an uncorrected one.

    Instead: Check the link (`sudo lspci -vv -s <bus id> | grep -E 'LnkSta|UESta|CESta'`), reseat
    the card or riser and update BIOS/PCIe firmware; drain the node on uncorrected errors.
    """

    id = "DR303"
    area = "kernel_log"
    fires_on = (
        Example("an uncorrected (fatal) error", lambda: _log(AER_CORRECTED, AER_FATAL), "problem"),
        Example("corrected errors only", lambda: _log(AER_CORRECTED), "warn"),
    )
    quiet_on = (Example("no AER lines", lambda: _log(XID_13, OOM_KILL), None),)

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        pcie = _by_kind(facts.kernel_log)[LogKind.PCIE_ERROR]
        if not pcie:
            return
        fatal = [m for m in pcie if re.search(r"Uncorrect", m.fields.get("severity", ""), re.I)]
        devices = sorted({m.fields.get("device", "?") for m in pcie})
        on = ", ".join(devices)
        check_link = _(
            "Check the link: `sudo lspci -vv -s <bus id> | grep -E 'LnkSta|UESta|CESta'`; "
            "reseat the card or riser and update BIOS/PCIe firmware"
        )
        yield self.result(
            "problem" if fatal else "warn",
            _("PCIe uncorrected bus errors on {devices}", devices=on)
            if fatal
            else _("PCIe corrected bus errors on {devices}", devices=on),
            found=_last(fatal or pcie),
            wanted=_("no AER errors"),
            why=(
                _(
                    "An uncorrected PCIe error takes the device off the bus: the GPU or NIC stops "
                    "answering and the job hangs in its next transfer or collective."
                )
                if fatal
                else _(
                    "Corrected PCIe errors are retried by the link: a flood of them slows "
                    "transfers and often precedes an uncorrected error."
                )
            ),
            fix=_("{check_link}; {drain}", check_link=check_link, drain=_(DRAIN))
            if fatal
            else check_link,
            source=AER_SOURCE,
        )


class OomKills(Check):
    """OOM-killer kills

    Why: A rank or DataLoader worker killed by the OOM killer for host memory dies with SIGKILL and
    no traceback, and leaves its peers waiting in a collective or on a queue that is never filled.
    Kills in the kernel log show the node is short of memory for its jobs.

    Instead: Use less host memory per job (fewer DataLoader workers, a smaller `prefetch_factor` or
    batch), check `free -g` and the job's memory limit (`cat /sys/fs/cgroup/memory.max`).
    """

    id = "DR304"
    area = "kernel_log"
    fires_on = (Example("a DataLoader worker killed", lambda: _log(OOM_KILL), "warn"),)
    quiet_on = (Example("no OOM kill", lambda: _log(HUNG_TASK), None),)

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        oom = _by_kind(facts.kernel_log)[LogKind.OOM_KILLED]
        if not oom:
            return
        names = sorted({m.detail or "?" for m in oom})
        yield self.result(
            "warn",
            _(
                "The OOM killer ended {count} process(es): {names}",
                count=len(oom),
                names=", ".join(names),
            ),
            found=_last(oom),
            wanted=_("no OOM kills"),
            why=_(
                "A rank or DataLoader worker killed for host memory leaves its peers waiting "
                "in a collective or on a queue that is never filled."
            ),
            fix=_(
                "Lower DataLoader num_workers or prefetch_factor, or the batch size; check "
                "`free -g` and the job's memory limit (`cat /sys/fs/cgroup/memory.max`)"
            ),
        )


class HungTasks(Check):
    """hung-task reports (`blocked for more than N seconds`)

    Why: A task in uninterruptible sleep (usually I/O: NFS, a dying disk, a driver) cannot be killed
    and stalls whatever waits for it. Hung-task reports mean storage or a driver on this node stops
    answering, and the next job reading from it will stall too.

    Instead: Find the blocked I/O (`cat /proc/<pid>/stack`, `mount | grep nfs`, `sudo dmesg -T |
    grep -B5 'blocked for more than'`), fix or remount the storage, and read training data from
    local disk.
    """

    id = "DR305"
    area = "kernel_log"
    fires_on = (Example("python3 blocked for 122 s", lambda: _log(HUNG_TASK), "warn"),)
    quiet_on = (Example("no hung task", lambda: _log(OOM_KILL), None),)

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        hung = _by_kind(facts.kernel_log)[LogKind.HUNG_TASK]
        if not hung:
            return
        names = sorted({m.fields.get("comm", "?") for m in hung})
        yield self.result(
            "warn",
            _("Tasks blocked in the kernel: {names}", names=", ".join(names)),
            found=_last(hung),
            wanted=_("no hung-task reports"),
            why=_(
                "A task stuck in uninterruptible sleep (usually I/O: NFS, a dying disk, a "
                "driver) cannot be killed and stalls whatever waits for it."
            ),
            fix=_(
                "Find the blocked I/O: `cat /proc/<pid>/stack`, `mount | grep nfs`, "
                "`sudo dmesg -T | grep -B5 'blocked for more than'`"
            ),
        )


class GpuFellOffTheBus(Check):
    """a GPU fallen off the bus without an Xid line

    Why: A GPU that fell off the bus no longer answers on PCIe: every process using it hangs or
    fails, and so do their peers. Only a reset or a reboot brings it back, and a GPU that falls off
    again has a failing card, seat or power supply.

    Instead: Reset the GPU or reboot the node, then drain it and have the GPU, its seat and its
    power checked before running jobs there again.
    """

    id = "DR306"
    area = "kernel_log"
    fires_on = (Example("the driver's line without Xid 79", lambda: _log(FELL_OFF), "problem"),)
    quiet_on = (
        # Xid 79 already says it (DR302): the same fault is not reported twice.
        Example("with its Xid 79", lambda: _log(XID_79, FELL_OFF), None),
        Example("a clean log", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        kinds = _by_kind(facts.kernel_log)
        if not kinds[LogKind.GPU_LOST] or any(
            m.number(LogKind.XID) == 79 for m in kinds[LogKind.XID]
        ):
            return
        yield self.result(
            "problem",
            _("A GPU fell off the bus"),
            found=_last(kinds[LogKind.GPU_LOST]),
            wanted=_("no such line"),
            why=_(
                "The GPU no longer answers on PCIe: every process using it hangs or fails, and "
                "so do their peers."
            ),
            fix=_("{action} Then {drain}.", action=_(XIDS[79].action), drain=_(DRAIN)),
            source=XID_SOURCE,
        )
