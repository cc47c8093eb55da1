# case: HL103 real https://github.com/huggingface/accelerate/issues/2019
# Image buckets were split between processes by slicing on the process index, without
# padding or truncating to a multiple of the world size; one GPU ran out of data first and
# the others waited for its backward pass forever.
from accelerate import Accelerator


def my_share(images):
    accelerator = Accelerator()
    return images[accelerator.process_index::accelerator.num_processes]  # expect: HL103
