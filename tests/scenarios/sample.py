"""The live sample: the scenarios CI runs for real, one at a time, beside the replay of every
recording (test_replay.py). Chosen to cover every category the catalogue has, every launcher,
both no-ptrace modes, the healthy controls with every core kept busy and one job each of JAX and
Keras (their own interpreter, skipped where there is none), in at most 27 jobs
(`test_sample.py` checks all of that, and that each job's limit is at least three times its
wall time as measured on a loaded machine, in `sample_seconds.json`).

Each entry is a scenario and the mode it runs in (`modes`); the whole catalogue stays the
measurement (`run_suite.py`, `pytest -m scenario`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tests.scenarios import modes
from tests.scenarios.catalog import BY_NAME
from tests.scenarios.scenario import Scenario

#: Measured wall time of each sample job on a loaded 2-core machine (one spinner beside it),
#: written by `python tests/scenarios/measure_sample.py`.
MEASURED = Path(__file__).resolve().parent / "sample_seconds.json"
MAX_JOBS = 27
MARGIN = 3.0


@dataclass(frozen=True)
class SampleJob:
    scenario: Scenario
    mode: str = modes.RUN

    @property
    def id(self) -> str:
        return self.scenario.name if self.mode == modes.RUN else f"{self.scenario.name}@{self.mode}"


def _job(name: str, mode: str = modes.RUN) -> SampleJob:
    return SampleJob(BY_NAME[name], mode)


LIVE_SAMPLE: tuple[SampleJob, ...] = (
    # python: the data path, threads, pipes, native code, a busy loop, the OS, NaN
    _job("worker_remote_read"),
    # (a worker's segfault: its line comes from faulthandler, re-armed over torch's handlers)
    _job("r8b_loader_packed_null_record"),
    _job("checkpoint_thread_locks"),
    _job("export_compressed"),
    _job("native_device_wait"),
    _job("eval_flag_spin"),
    _job("nan_skip_retry"),
    _job("keeps_activations"),
    _job("loader_open_files"),
    _job("custom_op_library"),
    _job("u_process_pool_max_tasks"),
    # torchrun: collectives, ranks, the rendezvous, timeouts
    _job("ddp_rank0_checkpoint"),
    _job("ddp_uneven_shards"),
    _job("ddp_early_stop"),
    _job("ddp_rank_prepares_data"),
    _job("ddp_short_pg_timeout"),
    # the other launchers and frameworks
    _job("u_spawn_straggler_upload"),
    _job("u_lightning_rank0_barrier"),
    _job("u_accelerate_main_wait"),
    # (the Trainer's collator raises: the KeyError unwrapped from the message that quotes it)
    _job("x_trainer_message"),
    _job("ray_task_remote_read"),
    # JAX and Keras (issue 30): a jitted loop, a Keras fit, with the JAX/TensorFlow interpreter
    _job("jax_loop_producer_died"),
    _job("keras_callback_lock"),
    # without ptrace: under `run`, and with no wrapper at all
    _job("worker_fork_lock", modes.RUN_NOPTRACE),
    _job("ddp_rank_fetches_config", modes.WATCH_NOPTRACE),
    # healthy controls with every core kept busy
    _job("healthy_ddp_loaded"),
    _job("healthy_silent_eval_loaded"),
)

_FRAMEWORKS = {
    "lightning": re.compile(r"^\s*(import lightning|from lightning)", re.M),
    "accelerate": re.compile(r"^\s*(import accelerate|from accelerate)", re.M),
    "trainer": re.compile(r"\bTrainer\(", re.M),
    "ray": re.compile(r"^\s*import ray\b", re.M),
    "mp.spawn": re.compile(r"\b(mp|multiprocessing)\.spawn\(", re.M),
    "jax": re.compile(r"^\s*(import jax|from jax)\b", re.M),
    "keras": re.compile(r"^\s*(import keras|from keras|from tensorflow import keras)\b", re.M),
}


def launchers(scenario: Scenario) -> frozenset[str]:
    """How the scenario's job is started and what runs it: `python` or `torchrun` (the command),
    and the frameworks its program drives (`mp.spawn`, `lightning`, `accelerate`, `trainer`,
    `ray`, `jax`, `keras`)."""
    found = (
        {"torchrun"} if scenario.torchrun or "torch.distributed.run" in scenario.launcher else set()
    )
    if not found and not scenario.launcher:
        found.add("python")
    if any("accelerate" in word for word in scenario.launcher):
        found.add("accelerate")
    text = scenario.path.read_text(encoding="utf-8")
    found |= {name for name, pattern in _FRAMEWORKS.items() if pattern.search(text)}
    if "trainer" in found and "transformers" not in text:
        found.discard("trainer")  # Lightning's Trainer is Lightning's
    return frozenset(found)


def measured_seconds() -> dict[str, float]:
    """Each sample job's measured wall time on a loaded machine, by job id."""
    if not MEASURED.is_file():
        return {}
    return {k: float(v) for k, v in json.loads(MEASURED.read_text())["seconds"].items()}
