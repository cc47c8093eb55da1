"""The lint run on the user's files that the captured stacks show, as evidence for the rules."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hangdoctor.evidence import build as b
from hangdoctor.probes.code_review import review_code, user_files

GUARDED = textwrap.dedent("""\
    import torch.distributed as dist


    def save(model, rank):
        if rank == 0:
            torch.save(model.state_dict(), "ckpt.pt")
            dist.barrier()


    def train(model, rank):
        for step in range(100):
            save(model, rank)
""")


def _snapshot(*files: str):
    frames = [b.frame(path, 12, "train") for path in files]
    return b.bundle(b.process(10, b.thread(10, *frames, name="MainThread"))).snapshots


def test_the_users_file_is_reviewed_and_the_rank_condition_is_kept(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(GUARDED)
    found = review_code(_snapshot(str(script)))
    guarded = [f for f in found if f.rule_id == "HL101"]
    assert len(guarded) == 1
    finding = guarded[0]
    assert (finding.line, finding.function, finding.ranks) == (7, "save", "main")
    assert finding.code == "dist.barrier()"
    assert finding.category == "distributed.collective_mismatch"


def test_installed_packages_and_missing_files_are_not_read(tmp_path: Path):
    site = f"{b.SITE}/lightning/pytorch/trainer/trainer.py"
    assert user_files(_snapshot(site)) == []
    assert review_code(_snapshot(str(tmp_path / "gone.py"))) == ()
