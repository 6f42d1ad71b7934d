"""cluster() with command roles (douban's jobs_def with "cmd"), on the embedded master: no
TensorFlow, the tasks are shell commands."""
from __future__ import annotations

from tests.localmesos.scheduler_client import wait_until
from tfmesos.client import cluster as cluster_api


def test_a_command_role_is_ready_once_running_or_already_finished(tmp_path, monkeypatch):
    """douban's cluster() returned once every task had started: a command that never opens its
    port, or one that is already done, does not hold the start until start_timeout."""
    monkeypatch.chdir(tmp_path)  # a jobs_def's commands run in the caller's directory
    jobs = [{"name": "worker", "num": 2, "cmd": "touch started-{task_index} && sleep 60"},
            {"name": "evaluator", "num": 1, "cmd": "touch evaluated"}]
    # Waiting for ports no command opens ends in ClusterError ("not serving after ..."): getting into
    # the block at all is the check (no clock involved).
    with cluster_api.cluster(jobs, start_timeout=120, quiet=True) as c:
        assert sorted(c.targets) == ["/job:evaluator/task:0", "/job:worker/task:0", "/job:worker/task:1"]
        assert not c.finished()
        # RUNNING is the process started, not yet its first command: the touches come soon after (the
        # evaluator's too: ready while RUNNING, it may not have run it yet, and the block's end kills it).
        wait_until(lambda: all((tmp_path / name).exists() for name in ("started-0", "started-1", "evaluated")),
                   timeout=30, message="the commands ran in the caller's directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evaluated", "started-0", "started-1"]
