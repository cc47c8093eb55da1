# case: HL103 fixed
import math

import tensorflow as tf
import torch.distributed as dist


def my_files(files):
    world_size = dist.get_world_size()
    total = math.ceil(len(files) / world_size) * world_size
    files = files + files[: total - len(files)]
    return files[dist.get_rank()::world_size]


def val_pipeline(x, rank, size):
    val = tf.data.Dataset.from_tensor_slices(x)
    val = val.shard(size, rank)
    val = val.take(1000 // size)
    return val


def floor_blocks(items, rank, world_size):
    per_rank = len(items) // world_size
    return items[rank * per_rank:(rank + 1) * per_rank]
