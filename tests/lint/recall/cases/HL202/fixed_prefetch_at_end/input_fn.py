# case: HL202 fixed https://github.com/tensorflow/models/issues/4354
import tensorflow as tf


def input_fn(files, batch_size, parse):
    dataset = tf.data.TFRecordDataset(files).map(parse).batch(batch_size)
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    return dataset
