# case: HL103 real https://github.com/horovod/horovod/issues/3675
# The training shard is repeated forever, but the validation set is sharded per rank with
# no repeat: ranks get different numbers of validation batches.
import horovod.tensorflow.keras as hvd
import tensorflow as tf


def datasets(train_x, train_y, val_x, val_y):
    hvd.init()
    train = tf.data.Dataset.from_tensor_slices((train_x, train_y))
    train = train.repeat().shuffle(10000).batch(256)
    train = train.shard(hvd.size(), hvd.rank())
    val = tf.data.Dataset.from_tensor_slices((val_x, val_y))
    val = val.shard(hvd.size(), hvd.rank())  # expect: HL103
    return train, val.batch(256)
