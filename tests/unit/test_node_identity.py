"""Node identity from the job's command and the environment as torchrun, Slurm and Kubeflow's
training operator set it (each test's docstring says where the variables come from)."""

from __future__ import annotations

import pytest

from hangdoctor.nodes.identity import NodeIdentity, first_host, node_identity


def srun_task(node: int, nodes: int = 4, tasks_per_node: int = 1) -> dict[str, str]:
    """What `srun` (one task a node) gives each task of `sbatch --nodes=4`: SLURM_NODEID the
    node's relative id, SLURM_PROCID the task's rank, SLURM_NNODES/SLURM_JOB_NUM_NODES the node
    count, SLURM_STEP_NODELIST/SLURM_JOB_NODELIST compressed host lists
    (https://slurm.schedmd.com/srun.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES and
    https://slurm.schedmd.com/sbatch.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES)."""
    return {
        "SLURM_JOB_ID": "4242",
        "SLURM_JOBID": "4242",
        "SLURM_JOB_NAME": "train",
        "SLURM_JOB_NODELIST": "gpu[001-003,007]",
        "SLURM_JOB_NUM_NODES": str(nodes),
        "SLURM_NNODES": str(nodes),
        "SLURM_NODEID": str(node),
        "SLURM_NODELIST": "gpu[001-003,007]",
        "SLURM_NTASKS": str(nodes * tasks_per_node),
        "SLURM_NTASKS_PER_NODE": str(tasks_per_node),
        "SLURM_PROCID": str(node * tasks_per_node),
        "SLURM_LOCALID": "0",
        "SLURM_STEP_ID": "0",
        "SLURM_STEP_NODELIST": "gpu[001-003,007]",
        "SLURM_STEP_NUM_NODES": str(nodes),
        "SLURMD_NODENAME": ("gpu001", "gpu002", "gpu003", "gpu007")[node],
    }


def pytorchjob_pod(replica: str, index: int, workers: int = 3) -> dict[str, str]:
    """A PyTorchJob pod of Kubeflow's training operator (v1): MASTER_ADDR is the master pod's
    service `<job>-master-0`, MASTER_PORT the container port (23456 by default), WORLD_SIZE the
    number of replicas (pods) and RANK the pod's index, a worker's shifted by one for the
    master (pkg/controller.v1/pytorch/master.go and envvar.go of
    github.com/kubeflow/training-operator;
    https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/pytorch/)."""
    rank = index + 1 if replica == "worker" else index
    return {
        "PYTHONUNBUFFERED": "0",
        "MASTER_PORT": "23456",
        "MASTER_ADDR": "llama-ft-master-0",
        "WORLD_SIZE": str(workers + 1),
        "RANK": str(rank),
        "KUBERNETES_PORT": "tcp://10.96.0.1:443",
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
    }


def elastic_pod(index: int) -> dict[str, str]:
    """A PyTorchJob with an elasticPolicy (minReplicas 1, maxReplicas 4): the operator adds
    PET_RDZV_ENDPOINT `<job>-worker-0:<port>`, PET_RDZV_BACKEND c10d, PET_NNODES `min:max`,
    PET_NPROC_PER_NODE and PET_RDZV_ID, torchrun's own variables
    (pkg/controller.v1/pytorch/elastic.go of github.com/kubeflow/training-operator)."""
    return {
        "PYTHONUNBUFFERED": "0",
        "PET_RDZV_ENDPOINT": "elastic-job-worker-0:23456",
        "PET_RDZV_BACKEND": "c10d",
        "PET_NNODES": "1:4",
        "PET_NPROC_PER_NODE": "8",
        "PET_RDZV_ID": "elastic-job",
        "PET_MAX_RESTARTS": "3",
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
    }


def trainjob_pod(index: int) -> dict[str, str]:
    """A TrainJob pod of Kubeflow Trainer (v2), torch plugin: PET_NNODES, PET_NPROC_PER_NODE,
    PET_NODE_RANK (the Job completion index), PET_MASTER_ADDR `<job>-node-0-0.<job>` and
    PET_MASTER_PORT 29500 (pkg/runtime/framework/plugins/torch and pkg/constants of
    github.com/kubeflow/trainer)."""
    return {
        "PET_NNODES": "2",
        "PET_NPROC_PER_NODE": "auto",
        "PET_NODE_RANK": str(index),
        "PET_MASTER_ADDR": "tj-node-0-0.tj",
        "PET_MASTER_PORT": "29500",
    }


def test_slurm_alone_names_node_count_rank_job_and_the_first_host_of_the_step() -> None:
    """srun's SLURM_NODEID, SLURM_NNODES, SLURM_JOB_ID; SLURM_STEP_NODELIST's first host
    (https://slurm.schedmd.com/srun.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES)."""
    identity = node_identity(["python", "train.py"], srun_task(2), "gpu003")
    assert identity == NodeIdentity(
        host="gpu003",
        node_rank=2,
        nnodes=4,
        job_id="4242",
        coordinator=("gpu001", 29500),
        source="slurm",
    )


def test_the_steps_nodelist_wins_over_the_jobs() -> None:
    """`srun --nodes=2` inside a 4-node allocation runs on the step's nodes, SLURM_STEP_NODELIST
    (https://slurm.schedmd.com/srun.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES)."""
    env = {**srun_task(0), "SLURM_STEP_NODELIST": "gpu[003,007]"}
    assert node_identity(["python", "train.py"], env, "gpu003").coordinator == ("gpu003", 29500)


def test_the_job_nodelist_serves_when_there_is_no_step() -> None:
    """In the batch script itself, before any srun, there is no step: SLURM_JOB_NODELIST
    (https://slurm.schedmd.com/sbatch.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES)."""
    env = {
        k: v for k, v in srun_task(0).items() if not k.startswith(("SLURM_STEP", "SLURM_PROCID"))
    }
    env["SLURM_JOB_NODELIST"] = "gpu[005-008]"
    identity = node_identity(["python", "train.py"], env, "gpu005")
    assert identity.coordinator == ("gpu005", 29500)
    assert identity.node_rank == 0 and identity.nnodes == 4


def test_an_sbatch_script_that_exports_master_port_keeps_it() -> None:
    """Scripts set MASTER_PORT themselves for torch; Slurm names the host."""
    env = {**srun_task(1), "MASTER_PORT": "29611"}
    assert node_identity(["python", "train.py"], env, "gpu002").coordinator == ("gpu001", 29611)


def test_torchruns_own_options_win_over_slurm() -> None:
    """`srun hangdoctor run -- torchrun --nnodes=4 --node_rank=$SLURM_NODEID
    --rdzv-endpoint=head:29400 ...` (https://docs.pytorch.org/docs/stable/elastic/run.html)."""
    argv = [
        "torchrun",
        "--nnodes=4",
        "--nproc_per_node",
        "8",
        "--node_rank",
        "3",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint",
        "head:29400",
        "--rdzv_id",
        "run-17",
        "train.py",
        "--nnodes",
        "99",  # the script's own option, not torchrun's
    ]
    identity = node_identity(argv, srun_task(1), "gpu003")
    assert identity.nnodes == 4 and identity.node_rank == 3
    assert identity.coordinator == ("head", 29400) and identity.job_id == "run-17"
    assert identity.source == "torchrun"


def test_an_elastic_node_count_and_a_rendezvous_without_port() -> None:
    """`--nnodes 1:4` is elastic (at most 4 nodes); c10d's endpoint port defaults to 29400;
    with c10d the node rank is assigned at rendezvous, so Slurm's stands in."""
    argv = ["torchrun", "--nnodes", "1:4", "--rdzv_endpoint=gpu001", "-m", "trainer.main"]
    identity = node_identity(argv, srun_task(1), "gpu002")
    assert identity.nnodes == 4 and identity.coordinator == ("gpu001", 29400)
    assert identity.node_rank == 1 and identity.job_id == "4242"
    assert identity.source == "torchrun+slurm"


def test_master_address_options_and_the_module_launcher() -> None:
    """`python -m torch.distributed.run --master-addr A --master_port P` (static rendezvous;
    torchrun's master port defaults to 29500)."""
    argv = [
        "python",
        "-m",
        "torch.distributed.run",
        "--nnodes=2",
        "--node-rank=1",
        "--master-addr",
        "10.0.0.5",
        "--master_port=29555",
        "train.py",
    ]
    identity = node_identity(argv, {}, "n2")
    assert identity.coordinator == ("10.0.0.5", 29555)
    assert (identity.node_rank, identity.nnodes, identity.source) == (1, 2, "torchrun")
    no_port = node_identity(["torchrun", "--master_addr", "10.0.0.5", "train.py"], {}, "n2")
    assert no_port.coordinator == ("10.0.0.5", 29500)


def test_standalone_is_one_node() -> None:
    identity = node_identity(["torchrun", "--standalone", "--nproc-per-node=8", "t.py"], {}, "h")
    assert (identity.nnodes, identity.node_rank) == (1, 0)


def test_a_pytorchjob_worker_pod() -> None:
    """PyTorchJob v1: the operator's RANK and WORLD_SIZE count pods, one node each."""
    identity = node_identity(["python", "train.py"], pytorchjob_pod("worker", 1), "llama-ft-w-1")
    assert identity == NodeIdentity(
        host="llama-ft-w-1",
        node_rank=2,
        nnodes=4,
        job_id=None,
        coordinator=("llama-ft-master-0", 23456),
        source="operator",
    )


def test_a_pytorchjob_pod_running_torchrun_with_its_env() -> None:
    """`hangdoctor run -- torchrun --nnodes=$WORLD_SIZE --node_rank=$RANK ...` in the pod:
    the options, expanded by the shell, say the same as the operator."""
    env = pytorchjob_pod("master", 0)
    argv = ["torchrun", "--nnodes=4", "--node_rank=0", "--master_addr", env["MASTER_ADDR"]]
    identity = node_identity([*argv, "--master_port", env["MASTER_PORT"], "train.py"], env, "m0")
    assert (identity.node_rank, identity.nnodes) == (0, 4)
    assert identity.coordinator == ("llama-ft-master-0", 23456)


def test_an_elastic_pytorchjob_pod() -> None:
    """elasticPolicy: PET_NNODES `1:4`, PET_RDZV_ENDPOINT and PET_RDZV_ID, no node rank."""
    identity = node_identity(["torchrun", "train.py"], elastic_pod(2), "elastic-job-worker-2")
    assert identity.nnodes == 4 and identity.node_rank is None
    assert identity.coordinator == ("elastic-job-worker-0", 23456)
    assert identity.job_id == "elastic-job" and identity.source == "torchrun-env"


def test_a_trainjob_pod() -> None:
    """Kubeflow Trainer v2: PET_NODE_RANK, PET_NNODES, PET_MASTER_ADDR/PORT."""
    identity = node_identity(["torchrun", "train.py"], trainjob_pod(1), "tj-node-0-1")
    assert identity == NodeIdentity(
        host="tj-node-0-1",
        node_rank=1,
        nnodes=2,
        job_id=None,
        coordinator=("tj-node-0-0.tj", 29500),
        source="torchrun-env",
    )


def test_a_process_world_size_under_slurm_is_not_a_node_count() -> None:
    """An sbatch script's `export WORLD_SIZE=$((SLURM_NNODES*8)) RANK=...` counts processes:
    Slurm's node numbers win, MASTER_ADDR still names the coordinator."""
    env = {**srun_task(1), "WORLD_SIZE": "32", "RANK": "8", "MASTER_ADDR": "gpu001"}
    identity = node_identity(["python", "train.py"], env, "gpu002")
    assert (identity.node_rank, identity.nnodes) == (1, 4)
    assert identity.coordinator == ("gpu001", 29500) and identity.source == "operator+slurm"


def test_node_rank_is_read_as_it_is() -> None:
    """NODE_RANK (Lightning's, or set by hand) names the node."""
    env = {"NODE_RANK": "1", "MASTER_ADDR": "head", "MASTER_PORT": "1234"}
    identity = node_identity(["python", "train.py"], env, "n1")
    assert identity.node_rank == 1 and identity.coordinator == ("head", 1234)


def test_slurm_procid_is_a_node_rank_only_with_one_task_a_node() -> None:
    """SLURM_PROCID is the task's rank: a node's only with one task per node."""
    one = {k: v for k, v in srun_task(2).items() if k != "SLURM_NODEID"}
    assert node_identity([], one, "h").node_rank == 2
    many = {k: v for k, v in srun_task(2, tasks_per_node=8).items() if k != "SLURM_NODEID"}
    assert node_identity([], many, "h").node_rank is None


def test_a_single_machine_says_nothing() -> None:
    assert node_identity(["python", "train.py"], {"HOME": "/root"}, "box") == NodeIdentity(
        host="box", node_rank=None, nnodes=None, job_id=None, coordinator=None, source="none"
    )


def test_ipv6_endpoints() -> None:
    identity = node_identity(["torchrun", "--rdzv-endpoint=[fd00::5]:29401", "t.py"], {}, "h")
    assert identity.coordinator == ("fd00::5", 29401)


@pytest.mark.parametrize(
    ("nodelist", "first"),
    [
        ("gpu[001-004,007]", "gpu001"),
        ("gpu[007,001-004]", "gpu007"),
        ("node1,node2", "node1"),
        ("gpu[01-02],cpu[1-4]", "gpu01"),
        ("rack[1-2]-node[03,05]", "rack1-node03"),
        ("single", "single"),
        ("", None),
    ],
)
def test_the_first_host_of_a_compressed_nodelist(nodelist: str, first: str | None) -> None:
    """Slurm's hostlist expressions: ranges and lists in brackets, comma-separated names."""
    assert first_host(nodelist) == first
