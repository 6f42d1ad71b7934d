"""Tests of the wire and the pymesos adapters (tfmesos/mesos/)."""
