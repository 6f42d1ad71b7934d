"""tfmesos: run distributed TensorFlow training jobs on Mesos and DC/OS."""

__version__ = "0.1.0"
