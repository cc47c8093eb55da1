# case: HL202 textbook
# The example: the pipeline is built and returned without prefetch, then trained on.
import tensorflow as tf


def make_dataset(x, y, batch_size=32):
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.shuffle(1024).map(lambda a, b: (a / 255.0, b))
    return ds.batch(batch_size)  # expect: HL202


def train(model, x, y):
    model.fit(make_dataset(x, y), epochs=5)
