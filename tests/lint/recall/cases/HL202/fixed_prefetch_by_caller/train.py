# case: HL202 fixed https://github.com/salesforce/ml4ir/pull/70
import tensorflow as tf


def make_dataset(x, y, batch_size=32):
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    return ds.map(lambda a, b: (a / 255.0, b)).batch(batch_size)


def train(model, x, y):
    model.fit(make_dataset(x, y).prefetch(tf.data.AUTOTUNE), epochs=5)


def train_named(model, x, y):
    ds = make_dataset(x, y)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    model.fit(ds, epochs=5)
