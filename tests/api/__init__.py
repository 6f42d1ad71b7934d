"""Tests of the scheduler API as a contract (tfmesos/api/)."""
