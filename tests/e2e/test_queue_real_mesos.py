"""The busy-cluster scenarios of test_queue.py against a real Apache Mesos master and agents.

Not part of `make test`: collected only when TFMESOS_REAL_MESOS names the folder of the real-mesos
scripts, as `make test-real-mesos` does (see real_mesos.py). The same jobs and assertions as
against the embedded master: four jobs on a cluster that fits two are queued (with the figures
read from the real master's /state) and all SUCCEED; a job larger than the cluster fails at once.
"""
from __future__ import annotations

import pytest

from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_queue import run_four_jobs_on_a_cluster_that_fits_two, run_never_fits_fails_at_once

pytestmark = pytest.mark.slow


def test_four_jobs_on_a_cluster_that_fits_two_queue_and_all_succeed_on_real_mesos(tmp_path):
    master = RealMesos(tmp_path / "mesos", ["cpus:1;mem:1024;disk:1000;ports:[31000-31999]",
                                            "cpus:1;mem:1024;disk:1000;ports:[32000-32999]"])
    try:
        run_four_jobs_on_a_cluster_that_fits_two(tmp_path, master)
        run_never_fits_fails_at_once(tmp_path, master)
    finally:
        master.stop()
