"""A maintenance window scheduled 60 s ahead on worker:1's machine, mid-training, on a real Apache
Mesos 1.12 (real_mesos.py, each agent its own machine: 127.0.0.x): the bars test_maintenance.py
checks on the embedded master, from the real master's inverse offers and unavailability."""
from __future__ import annotations

import pytest

from tests.e2e.drains import AGENT_CPUS, AGENT_MEM, MWMS_HANDLER, agents_for
from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_maintenance import assert_moved_in_time
from tests.e2e.maintenance import run_window

pytestmark = pytest.mark.slow


def test_a_window_60s_ahead_moves_the_tasks_before_it_opens_on_real_mesos(tmp_path):
    agents = [f"cpus:{AGENT_CPUS:g};mem:{AGENT_MEM:g};disk:4000;ports:[{31000 + 100 * i}-{31099 + 100 * i}]"
              for i in range(agents_for(MWMS_HANDLER))]
    with RealMesos(tmp_path / "mesos", agents, machine_per_agent=True) as cluster:
        assert_moved_in_time(run_window(tmp_path, cluster))
