"""HD450 gpu.device_fault: The GPU, its bus or its driver faulted: NVIDIA Xid lines, a GPU fallen
off the bus, PCIe Advanced Error Reporting. Says whether the application or the node is at
fault."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch, scan
from hangdoctor.i18n import N_, _
from hangdoctor.knowledge.xid import APPLICATION, NODE, XIDS
from hangdoctor.rules._log_rule import LogRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.rules.log_helpers import cite, kernel_lines, output_lines
from hangdoctor.taxonomy import Category

_FATAL_AER = re.compile(r"Uncorrect", re.IGNORECASE)


class GpuDeviceFault(LogRule):
    """the GPU or its bus faulted

    Fires when: NVIDIA Xid lines, a GPU fallen off the bus, PCIe AER errors; says per Xid whether
    the application or the node is at fault and what to do

    Why: The NVIDIA driver reports GPU and bus faults as Xid codes in the kernel log; a GPU that
    fell off the bus or PCIe errors mean the hardware or its link failed. Some Xids are the
    application's fault (an illegal address in a kernel), others the node's (memory errors, a lost
    GPU): the job on that GPU fails or hangs, and reruns on the same node fail again.

    Instead: Read what the Xid means (NVIDIA's Xid table): for an application Xid fix the kernel or
    the index that faulted; for a hardware Xid drain the node, reset the GPU when idle (`nvidia-smi
    -r -i N`) and have it checked (`nvidia-smi -q -d ECC`); run `hangdoctor doctor` before reusing
    the node.
    """

    id = "HD450"
    category = Category.GPU_DEVICE_FAULT
    specificity = 90

    def check(self, job: JobView) -> Iterable[Finding]:
        matches = [
            m
            for lines in (kernel_lines(job), output_lines(job))
            for m in scan(lines)
            if m.kind in (LogKind.XID, LogKind.GPU_LOST, LogKind.PCIE_ERROR)
        ]
        if not matches:
            return
        faults = _Faults.of(matches)
        severity, confidence = faults.grade()
        parts, fixes = _meanings(faults)
        if severity is Severity.CRITICAL:
            fixes.append(
                _(
                    "Take the node out of service before rerunning (Slurm: `scontrol update "
                    "nodename=<node> state=drain reason=gpu-xid`), and attach "
                    "`nvidia-bug-report.sh` output if you contact support."
                )
            )
        culprit_pid = next((m.pids[0] for m in faults.xids if m.pids), None)
        evidence = cite(
            sorted(matches, key=lambda m: (m.kind != LogKind.XID, m.index)), "kernel log"
        )
        yield self.finding(
            severity=severity,
            confidence=confidence,
            title=_title(faults, severity),
            explanation=" ".join(parts),
            culprit=Culprit(pid=culprit_pid) if culprit_pid else None,
            evidence=tuple(evidence),
            fixes=tuple(dict.fromkeys(fixes)),
        )


@dataclass(frozen=True)
class _Faults:
    """The faults the logs name: Xids (and which are the node's), a GPU lost, PCIe errors."""

    xids: list[LogMatch]
    lost: list[LogMatch]
    pcie: list[LogMatch]
    codes: list[int]
    #: The Xids that mean the node (not the application) is at fault.
    node: list[int]
    #: The uncorrected PCIe errors.
    fatal: list[LogMatch]

    @classmethod
    def of(cls, matches: list[LogMatch]) -> _Faults:
        xids = [m for m in matches if m.kind == LogKind.XID]
        pcie = [m for m in matches if m.kind == LogKind.PCIE_ERROR]
        codes = sorted({int(m.fields[LogKind.XID]) for m in xids})
        return cls(
            xids=xids,
            lost=[m for m in matches if m.kind == LogKind.GPU_LOST],
            pcie=pcie,
            codes=codes,
            node=[c for c in codes if XIDS.get(c, ("", NODE, ""))[1] == NODE],
            fatal=[m for m in pcie if _FATAL_AER.search(m.fields.get("severity", ""))],
        )

    def grade(self) -> tuple[Severity, Confidence]:
        """Critical when the node is at fault, an error for the application's Xids or an
        uncorrected bus error, a warning for corrected bus errors alone."""
        if self.node or self.lost or self.fatal:
            return Severity.CRITICAL, Confidence.PROVEN
        if self.codes or (
            self.pcie and not all("Correct" in m.fields.get("severity", "") for m in self.pcie)
        ):
            return Severity.ERROR, Confidence.STRONG
        return Severity.WARNING, Confidence.PLAUSIBLE


def _title(faults: _Faults, severity: Severity) -> str:
    devices = sorted(
        {
            re.sub(r"\.\d+$", "", m.fields["device"])
            for m in (*faults.xids, *faults.lost, *faults.pcie)
            if m.fields.get("device")
        }
    )
    device = _(" on {devices}", devices=", ".join(devices[:3])) if devices else ""
    if 79 in faults.codes or faults.lost:
        return _("GPU fell off the bus{device} (Xid 79)", device=device)
    if faults.codes:
        worst = (faults.node or faults.codes)[0]
        known = XIDS.get(worst)
        meaning = _(known.meaning) if known else _("see NVIDIA's Xid catalogue")
        return _(
            "GPU fault{device}: Xid {xid} ({meaning})",
            device=device,
            xid=worst,
            meaning=re.split("[:\uff1a]", meaning)[0],
        )
    if faults.fatal:
        return _("PCIe fatal bus error{device}", device=device)
    if severity is not Severity.WARNING:
        return _("PCIe bus error{device}", device=device)
    return _("Corrected PCIe errors{device}", device=device)


def _meanings(faults: _Faults) -> tuple[list[str], list[str]]:
    """What each fault means (whose fault it is) and what to do about it."""
    parts: list[str] = []
    fixes: list[str] = []
    for code in faults.codes:
        meaning, owner, action = XIDS.get(
            code,
            (
                N_("not in hangdoctor's table; look it up in NVIDIA's Xid catalogue"),
                NODE,
                N_("Look the Xid up in NVIDIA's catalogue and follow its resolution."),
            ),
        )
        verdict = (
            _("the application is at fault, the GPU is healthy")
            if owner == APPLICATION
            else _("the node needs attention")
        )
        parts.append(
            _("Xid {xid}: {meaning} ({verdict}).", xid=code, meaning=_(meaning), verdict=verdict)
        )
        fixes.append(_("Xid {xid}: {action}", xid=code, action=_(action)))
    if faults.lost and 79 not in faults.codes:
        parts.append(_("The driver reports the GPU fell off the bus: it no longer answers."))
        fixes.append(_(XIDS[79].action))
    if faults.pcie:
        parts.append(
            _(
                "PCIe Advanced Error Reporting logged {count} bus error(s), uncorrected.",
                count=len(faults.pcie),
            )
            if faults.fatal
            else _(
                "PCIe Advanced Error Reporting logged {count} bus error(s), all corrected.",
                count=len(faults.pcie),
            )
        )
        fixes.append(
            _(
                "Check the link (`sudo lspci -vv -s <bus id> | grep -E 'LnkSta|UESta'`),"
                " reseat the GPU or riser, and update BIOS/PCIe firmware."
            )
        )
    return parts, fixes
