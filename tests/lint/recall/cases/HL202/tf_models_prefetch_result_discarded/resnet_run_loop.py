# case: HL202 real https://github.com/tensorflow/models/issues/4354
# The input function called dataset.prefetch(...) but never assigned the result: datasets are
# immutable, so the pipeline returned was not prefetched at all.
import tensorflow as tf


def process_record_dataset(dataset, is_training, batch_size, parse_record_fn):
    dataset.prefetch(buffer_size=batch_size)
    if is_training:
        dataset = dataset.shuffle(buffer_size=10000).repeat()
    dataset = dataset.map(lambda value: parse_record_fn(value, is_training))
    dataset = dataset.batch(batch_size)  # expect: HL202
    dataset.prefetch(buffer_size=tf.data.AUTOTUNE)
    return dataset


def input_fn(files, batch_size, parse_record_fn):
    dataset = tf.data.Dataset.from_tensor_slices(files)
    dataset = dataset.flat_map(tf.data.TFRecordDataset)
    return process_record_dataset(dataset, True, batch_size, parse_record_fn)


def train(model, files, parse_record_fn):
    model.fit(input_fn(files, 64, parse_record_fn), steps_per_epoch=1000)
