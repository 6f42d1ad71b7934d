"""Tests of options in, JobSpec out (tfmesos/options/)."""
