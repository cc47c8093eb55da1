"""Recorded captures: one per scenario, kept in `recordings/NAME.json.xz`, so that the diagnosis
of the whole catalogue is a fast, deterministic test (`test_replay.py`) while the live runs stay
the measurement.

A recording holds what `hangdoctor run` diagnosed at the end of one live run of the scenario:
the evidence bundle (`evidence.json`) and how the job ended (verdict, exit code, hang), which is
all `pipeline.diagnose` takes. Machine-specific paths are written as placeholders (the
repository's root, the job's working folder) and put back at replay, so a recording made in one
clone replays in another. Each recording also keeps a fingerprint of what the live run ran (the
program's text and the scenario's launch settings): a recording whose fingerprint differs from
today's scenario is stale, to be recorded again (`record.py --stale`).
"""

from __future__ import annotations

import hashlib
import json
import lzma
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hangdoctor import __version__
from hangdoctor.evidence.model import Bundle
from hangdoctor.pipeline import Context, Mode, diagnose
from hangdoctor.report.model import Hang, Report
from hangdoctor.rules.base import Rule
from hangdoctor.rules.registry import ALL_RULES
from tests.scenarios.harness import Outcome, judge_report
from tests.scenarios.scenario import Scenario

FORMAT = "hangdoctor-scenario-recording/1"
RECORDINGS = Path(__file__).resolve().parent / "recordings"
REPO_ROOT = Path(__file__).resolve().parents[2]
_REPO = "@REPO@"
_WORK = "@WORK@"


class RecordingError(ValueError):
    """A recording that cannot be read or does not belong to its scenario."""


def recording_path(name: str, directory: Path = RECORDINGS) -> Path:
    return directory / f"{name}.json.xz"


def fingerprint(scenario: Scenario) -> str:
    """What a live run of `scenario` depends on besides hangdoctor: the program's text and how
    it is launched. A change to either makes the recording stale."""
    settings = {
        "args": list(scenario.args),
        "env": dict(sorted(scenario.env.items())),
        "hang_timeout_s": scenario.hang_timeout_s,
        "torchrun": scenario.torchrun,
        "launcher": list(scenario.launcher),
        "nproc": scenario.nproc,
        "stdin_pipe": scenario.stdin_pipe,
        "loaded": scenario.loaded,
    }
    digest = hashlib.sha256(scenario.path.read_bytes())
    digest.update(json.dumps(settings, sort_keys=True).encode())
    return digest.hexdigest()


def _normalise(text: str, work_dir: Path) -> str:
    """Machine-specific paths as placeholders (the longer path first, should one hold the
    other)."""
    pairs = sorted(
        ((str(work_dir), _WORK), (str(REPO_ROOT), _REPO)), key=lambda p: len(p[0]), reverse=True
    )
    for path, token in pairs:
        text = text.replace(path, token)
    return text


def save(
    scenario: Scenario, report_dir: Path, work_dir: Path, outcome: Outcome, directory: Path
) -> Path:
    """Keep the live run in `report_dir` as the scenario's recording; returns its path."""
    evidence = json.loads((report_dir / "evidence.json").read_text(encoding="utf-8"))
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    document = {
        "format": FORMAT,
        "scenario": scenario.name,
        "fingerprint": fingerprint(scenario),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hangdoctor": __version__,
        "live": {
            "seconds": round(outcome.seconds, 1),
            "correct": outcome.correct,
            "category": outcome.category,
            "location": outcome.location,
        },
        "ending": {
            "verdict": report["verdict"],
            "exit_code": report.get("exit_code"),
            "hang": report.get("hang"),
        },
        "evidence": evidence,
    }
    text = _normalise(json.dumps(document, separators=(",", ":")), work_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = recording_path(scenario.name, directory)
    path.write_bytes(lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    return path


@dataclass(frozen=True)
class Recording:
    """One recorded live run, its paths put back for this checkout."""

    name: str
    fingerprint: str
    recorded_at: str
    live: dict[str, Any]
    ending: dict[str, Any]
    evidence: dict[str, Any]


def load(path: Path, work_dir: Path | None = None) -> Recording:
    """The recording at `path`; the job's old working folder becomes `work_dir` (a scratch
    folder when not given) and the repository's root this checkout's."""
    try:
        text = lzma.decompress(path.read_bytes()).decode("utf-8")
    except (OSError, lzma.LZMAError, UnicodeDecodeError) as error:
        raise RecordingError(f"{path}: cannot read ({error})") from error
    work = work_dir or Path(tempfile.gettempdir()) / "hd-replay"
    text = text.replace(_WORK, str(work)).replace(_REPO, str(REPO_ROOT))
    document = json.loads(text)
    if document.get("format") != FORMAT:
        raise RecordingError(f"{path}: not a {FORMAT} file")
    return Recording(
        name=document["scenario"],
        fingerprint=document["fingerprint"],
        recorded_at=document["recorded_at"],
        live=document["live"],
        ending=document["ending"],
        evidence=document["evidence"],
    )


def replay(recording: Recording, rules: Sequence[type[Rule]] = ALL_RULES) -> Report:
    """Diagnose the recorded evidence as `run` did when the job ended: the same pipeline, the
    same context (`rules`: another rule set, to show that the replay can fail)."""
    bundle = Bundle.model_validate(recording.evidence)
    ending = recording.ending
    hang = Hang.model_validate(ending["hang"]) if ending.get("hang") else None
    context = Context(
        mode=Mode.ENDED,
        verdict=ending["verdict"],
        exit_code=ending.get("exit_code"),
        hang=hang,
        save_evidence=False,
        rules=rules,
    )
    return diagnose(bundle, context)


def judge(scenario: Scenario, report: Report) -> Outcome:
    """The replayed report judged as the live suite judges a run's report.json."""
    outcome = Outcome(scenario)
    judge_report(outcome, report.model_dump(mode="json"))
    return outcome


def is_stale(scenario: Scenario, directory: Path = RECORDINGS) -> bool:
    """Whether the scenario has no recording, or one older than its program or settings."""
    path = recording_path(scenario.name, directory)
    if not path.is_file():
        return True
    try:
        return load(path).fingerprint != fingerprint(scenario)
    except RecordingError:
        return True
