"""tfmesos: run distributed TensorFlow training jobs on Mesos and DC/OS."""

from .report import report

__version__ = "0.1.0"
__all__ = ["report"]
