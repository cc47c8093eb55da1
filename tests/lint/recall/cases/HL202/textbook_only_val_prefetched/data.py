# case: HL202 textbook
# One pipeline is prefetched, the training one is not: a prefetch elsewhere in the module
# does not help it.
import tensorflow as tf


def train(model, train_files, val_files, parse):
    train_ds = tf.data.TFRecordDataset(train_files).map(parse).batch(64)  # expect: HL202
    val_ds = tf.data.TFRecordDataset(val_files).map(parse).batch(64).prefetch(2)
    model.fit(train_ds, validation_data=val_ds, epochs=10)
