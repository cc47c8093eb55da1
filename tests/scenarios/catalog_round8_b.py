"""Round 8, helper b: six programs written from public reports by a helper that had not read
hangdoctor's code, jobs that fail (a DataLoader worker killed by SIGSEGV, an exhausted
open-file limit, a checkpoint whose keys do not match the model, a loss given the wrong target
dtype deep in a helper, a DDP usage error on one torchrun rank) and one healthy control that
logs handled tracebacks and exits 0. `first_try` is left for the caller to fill in after the
first run under the session's code; `blind` is the caller's choice too."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

HANG_TIMEOUT_S = 10.0
LIMIT_S = 120.0

ROUND8_B: tuple[Scenario, ...] = (
    # A worker's ctypes.memmove reads a record whose table entry a dedup pass set to address 0:
    # the worker dies by SIGSEGV and the trainer gets "DataLoader worker ... is killed by signal".
    Scenario(
        name="r8b_loader_packed_null_record",
        program="r8b_loader_packed_null_record.py",
        category="data.worker_killed",
        verdict="failed",
        markers=("native-read",),
        source="https://github.com/facebookresearch/pycls/issues/146",
        hang_timeout_s=HANG_TIMEOUT_S,
        limit_s=LIMIT_S,
        blind=False,
    ),
    # The job applies the containers' 256-descriptor limit and its dataset caches one open
    # file per sample, never closed: open() fails with EMFILE part-way through the first epoch.
    Scenario(
        name="r8b_shard_handle_cache_nofile",
        program="r8b_shard_handle_cache_nofile.py",
        category="env.os_limits",
        verdict="failed",
        markers=("open-per-sample",),
        source="https://github.com/graphdeco-inria/gaussian-splatting/pull/309",
        hang_timeout_s=HANG_TIMEOUT_S,
        limit_s=LIMIT_S,
        blind=False,
    ),
    # Pre-training saves the nn.DataParallel wrapper's state_dict ("module." keys); fine-tuning
    # loads it into the bare encoder and load_state_dict raises missing/unexpected keys.
    Scenario(
        name="r8b_finetune_dataparallel_prefix",
        program="r8b_finetune_dataparallel_prefix.py",
        category="process.exception",
        verdict="failed",
        markers=("load-encoder", "save-wrapped"),
        source="https://stackoverflow.com/questions/61854165",
        hang_timeout_s=HANG_TIMEOUT_S,
        limit_s=LIMIT_S,
        blind=False,
    ),
    # Ratings parsed with float() reach F.cross_entropy, three helpers down the training step, as
    # a float64 target: "expected target dtype to be Long or Byte, but got Double".
    Scenario(
        name="r8b_review_rating_double_target",
        program="r8b_review_rating_double_target.py",
        category="process.exception",
        verdict="failed",
        markers=("loss-call", "float-labels"),
        source="https://github.com/ahmedbesbes/character-based-cnn/issues/5",
        hang_timeout_s=HANG_TIMEOUT_S,
        limit_s=LIMIT_S,
        blind=False,
    ),
    # An unshuffled DistributedSampler gives rank 1 no annotated samples, so its mask head gets
    # no gradient and DDP raises "Expected to have finished reduction..." in rank 1's next forward.
    Scenario(
        name="r8b_ddp_partial_masks_aux_head",
        program="r8b_ddp_partial_masks_aux_head.py",
        category="process.exception",
        verdict="failed",
        rank=1,
        torchrun=True,
        markers=("ddp-forward", "mask-loss-skipped"),
        source="https://github.com/open-mmlab/mmdetection/issues/2153",
        hang_timeout_s=HANG_TIMEOUT_S,
        limit_s=LIMIT_S,
        blind=False,
    ),
    # Healthy: bad sample files, a missing resume checkpoint and a first failed export are each
    # logged with logging.exception and skipped or retried; the run completes with exit code 0.
    Scenario(
        name="r8b_healthy_skip_bad_shards",
        program="r8b_healthy_skip_bad_shards.py",
        category=HEALTHY,
        verdict="completed",
        source="https://github.com/GoogleCloudPlatform/gcs-connector-for-pytorch/pull/38",
        hang_timeout_s=HANG_TIMEOUT_S,
        limit_s=LIMIT_S,
        blind=False,
    ),
)
