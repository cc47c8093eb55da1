# case: HL202 real https://github.com/salesforce/ml4ir/pull/70
# The dataset class built its pipeline and returned it unprefetched; training then read it
# in lock-step (the PR prefetched the returned dataset: 30% faster training).
import tensorflow as tf


def read_tfrecords(files, parse_fn, batch_size):
    dataset = tf.data.TFRecordDataset(files)
    dataset = dataset.map(parse_fn, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.batch(batch_size)  # expect: HL202


class RelevanceDataset:
    def __init__(self, files, parse_fn, batch_size):
        self.train = read_tfrecords(files, parse_fn, batch_size)
