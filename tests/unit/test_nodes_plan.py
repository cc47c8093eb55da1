"""Whether a `hangdoctor run` is one node of several, and how it meets the others, from the
job's command and environment as torchrun, Slurm and the training operator give them."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.nodes.plan import session_plan

TORCHRUN = ("torchrun", "--nnodes", "3", "--node-rank", "1", "--nproc-per-node", "2")


def test_a_job_of_one_node_has_no_session(tmp_path: Path):
    assert session_plan(("python", "train.py"), {}, "vm", tmp_path) is None
    standalone = ("torchrun", "--standalone", "--nproc-per-node", "2", "train.py")
    assert session_plan(standalone, {"MASTER_ADDR": "10.0.0.1"}, "vm", tmp_path) is None


def test_torchrun_nodes_meet_in_the_jobs_rendezvous_store(tmp_path: Path):
    command = (*TORCHRUN, "--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.1:29400", "t.py")
    plan = session_plan(command, {}, "gpu-1", tmp_path)
    assert plan is not None
    assert (plan.me, plan.expected) == ("1", 3)
    assert plan.transport == "the job's TCPStore 10.0.0.1:29400"
    assert plan.report_dir is None  # its report stays where it was asked


def test_a_coordinator_wins_over_the_jobs_store(tmp_path: Path):
    command = (*TORCHRUN, "--rdzv-endpoint", "10.0.0.1:29400", "t.py")
    plan = session_plan(command, {}, "gpu-1", tmp_path, coordinator=("10.0.0.9", 29555))
    assert plan is not None and plan.transport == "coordinator TCPStore 10.0.0.9:29555"


def test_without_a_store_the_nodes_meet_in_the_shared_report_directory(tmp_path: Path):
    env = {"SLURM_NNODES": "4", "SLURM_NODEID": "2", "SLURM_JOB_ID": "991", "SLURM_NTASKS": "4"}
    plan = session_plan(("python", "train.py"), env, "gpu-3", tmp_path)
    assert plan is not None and plan.me == "2"
    assert plan.transport == f"directory {tmp_path / '.nodes' / '991'}"
    assert plan.report_dir == tmp_path / "node-2"


def test_several_slurm_tasks_on_a_node_are_members_of_their_own(tmp_path: Path):
    env = {
        "SLURM_NNODES": "2",
        "SLURM_NODEID": "1",
        "SLURM_NTASKS": "16",
        "SLURM_LOCALID": "3",
        "SLURM_JOB_ID": "7",
        "MASTER_ADDR": "gpu001",
        "MASTER_PORT": "29500",
    }
    plan = session_plan(("python", "train.py"), env, "gpu002", tmp_path)
    assert plan is not None and plan.me == "1.3"


def test_an_elastic_node_count_expects_no_particular_number_of_nodes(tmp_path: Path):
    command = ("torchrun", "--nnodes", "1:4", "--rdzv-endpoint", "10.0.0.1:29400", "t.py")
    plan = session_plan(command, {}, "gpu-1", tmp_path)
    assert plan is not None and plan.expected is None
