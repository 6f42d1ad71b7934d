"""Tests of the executor side (tfmesos/executor/)."""
