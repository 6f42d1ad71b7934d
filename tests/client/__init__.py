"""Tests of the client side (tfmesos/client/)."""
