"""A Keras model.fit whose model expects 32 features and whose data has 64: Keras raises in the
traced train step, and tf.function puts the real message after "in user code:"."""
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.Input(shape=(32,)), tf.keras.layers.Dense(10)])
model.compile(loss="mse", optimizer="sgd")
model.fit(np.zeros((64, 64), np.float32), np.zeros((64, 10), np.float32), epochs=1, verbose=0)
