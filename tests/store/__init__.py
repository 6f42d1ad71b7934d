"""Tests of the persisted record and the kept history (tfmesos/store/)."""
