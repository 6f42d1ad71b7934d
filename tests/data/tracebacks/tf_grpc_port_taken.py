import socket
import tensorflow as tf

taken = socket.socket()
taken.bind(("127.0.0.1", 0))
taken.listen()
port = taken.getsockname()[1]
cluster = tf.train.ClusterSpec({"chief": [f"127.0.0.1:{port}"]})
server = tf.distribute.Server(cluster, job_name="chief", task_index=0, protocol="grpc")
