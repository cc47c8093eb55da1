# case: HL202 real https://github.com/google/ml-compiler-opt/pull/34
# The training iterator repeated the parsed dataset but never prefetched it (the fix added
# .prefetch(tf.data.AUTOTUNE) at the end of the pipeline).
import tensorflow as tf


def dataset_fn(files, parser, batch_size):
    dataset = tf.data.TFRecordDataset(files)
    dataset = dataset.map(parser)
    return dataset.batch(batch_size, drop_remainder=True)  # expect: HL202


def sequence_example_iterator_fn(files, parser):
    return iter(dataset_fn(files, parser, 64).repeat())
