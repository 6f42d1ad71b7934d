"""A Keras layer of the script's own that raises in its call, during model.fit: Keras wraps its
message in "Exception encountered when calling layer ...", inside tf.function's "in user code:"."""
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf


class Checked(tf.keras.layers.Layer):
    def call(self, x):
        raise ValueError("the batch holds 64 features, the checkpoint's model 32")


model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), Checked(), tf.keras.layers.Dense(10)])
model.compile(loss="mse", optimizer="sgd")
model.fit(np.zeros((64, 64), np.float32), np.zeros((64, 10), np.float32), epochs=1, verbose=0)
