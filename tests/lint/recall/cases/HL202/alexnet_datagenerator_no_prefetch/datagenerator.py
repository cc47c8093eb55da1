# case: HL202 real https://github.com/kratzert/finetune_alexnet_with_tensorflow/issues/54
# After TensorFlow removed map()'s output_buffer_size, the generator kept map+batch with no
# buffering at all; the thread's answer was to add prefetch after batching.
import tensorflow as tf


class ImageDataGenerator:
    def __init__(self, paths, labels, batch_size, parse_fn):
        data = tf.data.Dataset.from_tensor_slices((paths, labels))
        data = data.map(parse_fn, num_parallel_calls=8)
        data = data.shuffle(buffer_size=1000)
        self.data = data.batch(batch_size)  # expect: HL202


def train(model, paths, labels, parse_fn):
    generator = ImageDataGenerator(paths, labels, 128, parse_fn)
    for images, targets in generator.data:
        model.train_on_batch(images, targets)
