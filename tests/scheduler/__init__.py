"""Tests of the scheduler side (tfmesos/scheduler/)."""
