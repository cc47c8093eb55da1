"""Kernel log: NVIDIA Xid lines (what each means and what it calls for), a GPU fallen off the
bus, PCIe AER errors, the OOM killer and the hung-task detector, within the time window.

Lines are recognised by `hangdoctor.analysis.logs.scan`, and Xids explained by the table of the
HD450 log rule, so `doctor`, `dump` and `analyze` read the kernel log the same way.
"""

from __future__ import annotations

import re
from collections import defaultdict

from hangdoctor.analysis.logs import LogMatch, scan
from hangdoctor.doctor.facts import Facts
from hangdoctor.doctor.result import CheckResult
from hangdoctor.knowledge.xid import APPLICATION, XIDS

XID_SOURCE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
AER_SOURCE = "https://docs.kernel.org/PCI/pcieaer-howto.html"
DRAIN = ("drain the node before the next job (Slurm: `scontrol update nodename=$(hostname -s) "
         "state=drain reason=gpu-xid`), then reset the GPU (`sudo nvidia-smi -r -i <index>`) "
         "or reboot")
_QUOTE = 160


def _r(id: str, status: str, title: str, **fields: str | None) -> CheckResult:
    return CheckResult(id=id, area="kernel_log", status=status, title=title,  # type: ignore[arg-type]
                       **{k: v for k, v in fields.items() if v is not None})


def _last(matches: list[LogMatch]) -> str:
    line = matches[-1].line
    more = f" (and {len(matches) - 1} more)" if len(matches) > 1 else ""
    return (line if len(line) <= _QUOTE else line[:_QUOTE] + "...") + more


def _xids(matches: list[LogMatch]) -> list[CheckResult]:
    by_code: dict[int, list[LogMatch]] = defaultdict(list)
    for match in matches:
        if (code := match.number("xid")) is not None:
            by_code[code].append(match)
    results = []
    for code in sorted(by_code):
        meaning, owner, action = XIDS.get(code, (
            "not in hangdoctor's table", "node",
            "Look it up in NVIDIA's Xid catalogue and follow its resolution."))
        devices = sorted({m.fields.get("device", "?") for m in by_code[code]})
        title = f"Xid {code} on {', '.join(devices)}: {meaning.split(':')[0]}"
        if owner == APPLICATION:
            results.append(_r(
                "DR302", "warn", title, found=_last(by_code[code]), wanted="no Xid",
                why=(f"{meaning}. An application error: the GPU is healthy, but the process "
                     "that hit it is stuck or dead, and its peers wait for it in their next "
                     "collective."),
                fix=action, source=XID_SOURCE))
        else:
            results.append(_r(
                "DR302", "problem", title, found=_last(by_code[code]), wanted="no Xid",
                why=(f"{meaning}. The GPU or node needs attention: jobs on it hang in their "
                     "first CUDA call or collective, or crash."),
                fix=f"{action} Then {DRAIN}.", source=XID_SOURCE))
    return results


def check(facts: Facts) -> list[CheckResult]:
    """Kernel log checks."""
    log = facts.kernel_log
    if not log.readable:
        failure = log.failure
        return [_r("DR301", "skipped", "Kernel log could not be read",
                   found=failure.message if failure else "unreadable",
                   why="Xid, PCIe, OOM-killer and hung-task lines are the only record of many "
                       "hardware and memory faults behind hangs.",
                   fix=(failure.help if failure and failure.help else
                        "sudo sysctl -w kernel.dmesg_restrict=0   (or run as root / with "
                        "CAP_SYSLOG)"))]
    matches = scan(tuple(log.lines))
    kinds: dict[str, list[LogMatch]] = defaultdict(list)
    for match in matches:
        kinds[match.kind].append(match)
    results = [_r("DR301", "ok", "Kernel log read",
                  found=f"{len(log.lines)} lines from {log.source} (window {log.window})")]
    results += _xids(kinds["xid"])
    if kinds["gpu_lost"] and not any(m.number("xid") == 79 for m in kinds["xid"]):
        results.append(_r("DR306", "problem", "A GPU fell off the bus",
                          found=_last(kinds["gpu_lost"]), wanted="no such line",
                          why="The GPU no longer answers on PCIe: every process using it hangs "
                              "or fails, and so do their peers.",
                          fix=f"{XIDS[79][2]} Then {DRAIN}.", source=XID_SOURCE))
    if pcie := kinds["pcie_error"]:
        fatal = [m for m in pcie if re.search(r"Uncorrect", m.fields.get("severity", ""), re.I)]
        devices = sorted({m.fields.get("device", "?") for m in pcie})
        results.append(_r(
            "DR303", "problem" if fatal else "warn",
            f"PCIe {'uncorrected' if fatal else 'corrected'} bus errors on {', '.join(devices)}",
            found=_last(fatal or pcie), wanted="no AER errors",
            why=("An uncorrected PCIe error takes the device off the bus: the GPU or NIC stops "
                 "answering and the job hangs in its next transfer or collective."
                 if fatal else
                 "Corrected PCIe errors are retried by the link: a flood of them slows "
                 "transfers and often precedes an uncorrected error."),
            fix=("Check the link: `sudo lspci -vv -s <bus id> | grep -E 'LnkSta|UESta|CESta'`; "
                 "reseat the card or riser and update BIOS/PCIe firmware" +
                 (f"; {DRAIN}" if fatal else "")),
            source=AER_SOURCE))
    if oom := kinds["oom_killed"]:
        names = sorted({m.detail or "?" for m in oom})
        results.append(_r(
            "DR304", "warn", f"The OOM killer ended {len(oom)} process(es): {', '.join(names)}",
            found=_last(oom), wanted="no OOM kills",
            why=("A rank or DataLoader worker killed for host memory leaves its peers waiting "
                 "in a collective or on a queue that is never filled."),
            fix=("Lower DataLoader num_workers or prefetch_factor, or the batch size; check "
                 "`free -g` and the job's memory limit (`cat /sys/fs/cgroup/memory.max`)")))
    if hung := kinds["hung_task"]:
        names = sorted({m.fields.get("comm", "?") for m in hung})
        results.append(_r(
            "DR305", "warn", f"Tasks blocked in the kernel: {', '.join(names)}",
            found=_last(hung), wanted="no hung-task reports",
            why=("A task stuck in uninterruptible sleep (usually I/O: NFS, a dying disk, a "
                 "driver) cannot be killed and stalls whatever waits for it."),
            fix=("Find the blocked I/O: `cat /proc/<pid>/stack`, `mount | grep nfs`, "
                 "`sudo dmesg -T | grep -B5 'blocked for more than'`")))
    if len(results) == 1:
        results[0] = results[0].model_copy(update={
            "found": results[0].found + "; no Xid, AER, OOM-killer or hung-task lines"})
    return results
