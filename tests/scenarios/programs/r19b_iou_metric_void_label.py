"""Segmentation fit dies in validation: a custom IoU metric meets the 255 "void" label.

Source: https://github.com/google-research/deeplab2/issues/106
  "'Label' out of bounds error during evaluation" -- training a segmentation model
  on a custom dataset ran, then the evaluation step failed inside
  tf.math.confusion_matrix with `assertion failed: [`labels` out of bound]`.

What happens:
  A small U-Net-style model segments synthetic "field parcel" tiles into 4
  classes. The validation annotations follow the Pascal/Cityscapes convention of
  marking uncertain border pixels with the ignore value 255. The user's loss
  (masked_sparse_ce) handles that correctly: it masks the void pixels out. The
  user's custom metric (ClassMeanIoU) does not: it flattens y_true and feeds it
  straight into tf.math.confusion_matrix(num_classes=4). The training tiles have
  no void pixels, so epoch 1 trains and logs normally. At the end of the epoch
  Keras runs validation; the first validation batch contains 255s and the
  confusion_matrix assertion fails inside the compiled test step, raising
  tensorflow InvalidArgumentError ("`labels` out of bound") out of model.fit.
  The origin is ClassMeanIoU.update_state, far from the fit() line.
"""
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import keras

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)

TILE = 32
N_CLASSES = 4
VOID = 255
BATCH = 16
LOG_EVERY = 5

workdir = tempfile.mkdtemp(prefix="r19b_parcels_")


def make_tiles(n, seed, void_border=0):
    """Tiles with 4 crop types laid out as blobs; label map per pixel."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:TILE, 0:TILE]
    imgs = np.zeros((n, TILE, TILE, 3), np.float32)
    masks = np.zeros((n, TILE, TILE), np.int32)
    palette = np.array([[0.2, 0.5, 0.2], [0.7, 0.6, 0.2], [0.3, 0.3, 0.6], [0.6, 0.3, 0.3]], np.float32)
    for i in range(n):
        cx, cy = rng.uniform(0, TILE, size=(2, 3))
        d = np.stack([(xx - cx[k]) ** 2 + (yy - cy[k]) ** 2 for k in range(3)], -1)
        lab = np.where(d.min(-1) < 60, d.argmin(-1) + 1, 0)
        masks[i] = lab
        imgs[i] = palette[lab] + 0.08 * rng.standard_normal((TILE, TILE, 3))
        if void_border:
            # annotators leave a band of "don't know" pixels along parcel borders
            edge = np.zeros_like(lab, bool)
            edge[1:, :] |= lab[1:, :] != lab[:-1, :]
            edge[:, 1:] |= lab[:, 1:] != lab[:, :-1]
            masks[i][edge] = VOID
    return imgs, masks


x_tr, y_tr = make_tiles(960, seed=3)
x_va, y_va = make_tiles(96, seed=4, void_border=1)
np.savez_compressed(os.path.join(workdir, "val_tiles.npz"), x=x_va, y=y_va)
print(f"train tiles {len(x_tr)}  val tiles {len(x_va)} "
      f"(void px in val: {(y_va == VOID).mean():.1%})  -> {workdir}", flush=True)

train_ds = tf.data.Dataset.from_tensor_slices((x_tr, y_tr)).shuffle(960, seed=0).batch(BATCH).prefetch(2)
val_ds = tf.data.Dataset.from_tensor_slices((x_va, y_va)).batch(BATCH).prefetch(2)


def masked_sparse_ce(y_true, y_pred):
    """Cross-entropy that ignores VOID pixels (like ignore_index in other frameworks)."""
    y_true = tf.cast(y_true, tf.int32)
    valid = tf.not_equal(y_true, VOID)
    safe = tf.where(valid, y_true, tf.zeros_like(y_true))
    ce = keras.losses.sparse_categorical_crossentropy(safe, y_pred, from_logits=True)
    w = tf.cast(valid, ce.dtype)
    return tf.reduce_sum(ce * w) / tf.maximum(tf.reduce_sum(w), 1.0)


class ClassMeanIoU(keras.metrics.Metric):
    """Accumulates a confusion matrix and reports the mean IoU over the crop classes."""

    def __init__(self, num_classes, name="miou", **kw):
        super().__init__(name=name, **kw)
        self.num_classes = num_classes
        self.cm = self.add_variable(shape=(num_classes, num_classes), initializer="zeros",
                                    dtype="float32", name="cm")

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels = tf.reshape(tf.cast(y_true, tf.int32), [-1])
        preds = tf.reshape(tf.argmax(y_pred, axis=-1, output_type=tf.int32), [-1])
        batch_cm = tf.math.confusion_matrix(labels, preds, num_classes=self.num_classes,  # HANG: void_label_out_of_bound
                                            dtype=tf.float32)
        self.cm.assign_add(batch_cm)

    def result(self):
        inter = tf.linalg.diag_part(self.cm)
        union = tf.reduce_sum(self.cm, 0) + tf.reduce_sum(self.cm, 1) - inter
        iou = tf.math.divide_no_nan(inter, union)
        return tf.reduce_mean(iou[1:])

    def reset_state(self):
        self.cm.assign(tf.zeros_like(self.cm))


def conv_block(x, f):
    x = keras.layers.Conv2D(f, 3, padding="same", activation="relu")(x)
    return keras.layers.Conv2D(f, 3, padding="same", activation="relu")(x)


def build_unet():
    inp = keras.Input((TILE, TILE, 3))
    c1 = conv_block(inp, 16)
    p1 = keras.layers.MaxPooling2D()(c1)
    c2 = conv_block(p1, 32)
    u1 = keras.layers.UpSampling2D()(c2)
    c3 = conv_block(keras.layers.Concatenate()([u1, c1]), 16)
    out = keras.layers.Conv2D(N_CLASSES, 1)(c3)
    return keras.Model(inp, out)


class StepLogger(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.t0 = time.time()

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch % LOG_EVERY == 0:
            print(f"epoch {self.epoch} step {batch} loss {logs['loss']:.4f} "
                  f"miou {logs['miou']:.3f} ({time.time() - self.t0:.1f}s)", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        print(f"epoch {epoch} val_loss {logs['val_loss']:.4f} val_miou {logs['val_miou']:.3f}", flush=True)


model = build_unet()
model.compile(optimizer=keras.optimizers.Adam(2e-3), loss=masked_sparse_ce,
              metrics=[ClassMeanIoU(N_CLASSES)])
ckpt = keras.callbacks.ModelCheckpoint(os.path.join(workdir, "unet_best.weights.h5"),
                                       monitor="val_miou", mode="max", save_weights_only=True)
print("start training", flush=True)
model.fit(train_ds, validation_data=val_ds, epochs=4, callbacks=[StepLogger(), ckpt], verbose=0)  # HANG: fit_runs_validation
print("done", flush=True)
