"""The lint run on the user's files that the captured stacks show, as evidence for the rules."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hangdoctor.evidence import build as b
from hangdoctor.probes.code_review import review, settings_in, user_files

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
    found = review(_snapshot(str(script))).findings
    guarded = [f for f in found if f.rule_id == "HL101"]
    assert len(guarded) == 1
    finding = guarded[0]
    assert (finding.line, finding.function, finding.ranks) == (7, "save", "main")
    assert finding.code == "dist.barrier()"
    assert finding.category == "distributed.collective_mismatch"


def test_installed_packages_and_missing_files_are_not_read(tmp_path: Path):
    site = f"{b.SITE}/lightning/pytorch/trainer/trainer.py"
    assert user_files(_snapshot(site)) == []
    assert review(_snapshot(str(tmp_path / "gone.py"))) == review(())


def test_the_size_setting_is_found_as_a_keyword_or_a_dict_entry(tmp_path: Path):
    script = tmp_path / "fit.py"
    script.write_text(
        'CLUSTER = {"devices": 2, "num_nodes": 2}\n\n\n'
        "def main(n):\n    dist.init_process_group('gloo', world_size=n)\n"
    )
    settings = {s.name: s for s in settings_in(script)}
    assert (settings["num_nodes"].value, settings["num_nodes"].line) == (2, 1)
    assert settings["world_size"].value is None  # not a literal: nothing to compare
    assert settings["world_size"].function == "main"


def test_missing_ranks_point_at_the_node_count_the_code_asks_for():
    from hangdoctor.analysis.job import JobView
    from hangdoctor.rules.distributed.rendezvous import Rendezvous
    from hangdoctor.rules.examples import example

    two_nodes = example(Rendezvous.id, "half the ranks never started: the code asks for two nodes")
    finding = next(iter(Rendezvous().check(JobView(two_nodes))))
    assert finding.culprit is not None and finding.culprit.location is not None
    assert (finding.culprit.location.file, finding.culprit.location.line) == ("train.py", 29)
    assert "num_nodes=2" in finding.fixes[0]


def test_a_queue_join_deadlock_points_at_the_loop_that_stopped_reading():
    from hangdoctor.analysis.job import JobView
    from hangdoctor.evidence.model import CodeFinding
    from hangdoctor.rules.examples import example
    from hangdoctor.rules.process.queue_join_deadlock import QueueJoinDeadlock

    loop = CodeFinding(
        rule_id="HL403",
        category="process.deadlock",
        file="train.py",
        line=46,
        function="main",
        code="for step in range(args.max_steps):",
        message="this loop reads the worker's queue a fixed number of times",
    )
    job = example(QueueJoinDeadlock.id, "the parent joins a child whose queue feeder is blocked")
    finding = next(
        iter(QueueJoinDeadlock().check(JobView(job.model_copy(update={"code_findings": (loop,)}))))
    )
    assert finding.culprit is not None and finding.culprit.location is not None
    assert (finding.culprit.location.line, finding.culprit.location.function) == (46, "main")
    alone = next(iter(QueueJoinDeadlock().check(JobView(job))))
    assert alone.culprit is not None and alone.culprit.location is not None
    assert alone.culprit.location.line == 60  # the join line, without the code's help


def test_one_review_finds_the_patterns_and_the_sizes_and_skips_broken_files(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(GUARDED + "\n\nTRAINER = dict(num_nodes=2)\n")
    broken = tmp_path / "broken.py"
    broken.write_text("def train(:\n")
    code = review(_snapshot(str(broken), str(script)))
    assert [f.rule_id for f in code.findings if f.rule_id == "HL101"] == ["HL101"]
    assert [(s.name, s.value) for s in code.settings] == [("num_nodes", 2)]
    assert {f.file for f in code.findings} == {str(script)}
