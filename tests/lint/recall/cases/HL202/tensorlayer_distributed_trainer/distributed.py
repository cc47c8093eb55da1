# case: HL202 real https://github.com/tensorlayer/TensorLayer/pull/766
# The distributed trainer mapped and batched the training set and iterated it with no
# prefetch: GPUs idled while the CPU prepared each batch (the PR added prefetch).
import tensorflow as tf


class Trainer:
    def __init__(self, training_dataset, build_training_func, batch_size, num_epochs):
        training_dataset = training_dataset.shuffle(10000).repeat(num_epochs)
        training_dataset = training_dataset.map(build_training_func, num_parallel_calls=4)
        training_dataset = training_dataset.batch(batch_size)  # expect: HL202
        self.iterator = iter(training_dataset)

    def train_on_batch(self, step_fn):
        return step_fn(next(self.iterator))
