"""Finding the master through ZooKeeper, and following it when the leader changes."""
from __future__ import annotations

import json
import re
import signal

from kazoo.client import KazooClient


from tests.e2e.harness import LocalMaster, run_scheduler, task_processes, wait_gone, write_options
from tests.e2e.test_jobs import PSS




def test_leader_change_announced_in_zookeeper_is_followed(tmp_path, zk):
    url = f"zk://{zk.hosts}/mesos"
    # The chief, done training, waits for a gate the test opens once the scheduler has followed the
    # new leader: the job runs across the change however loaded the machine, with no margin of steps.
    gate = tmp_path / "followed"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": "zk-leader"},
                         job={"command": '$TFMESOS_PYTHON train.py && while [ ! -e "$GATE" ]; do sleep 0.5; done',
                              "env": ["TRAIN_STEPS=400", "CHECKPOINT_EVERY=100", f"GATE={gate}"]})
    first = LocalMaster(tmp_path / "master", extra=["--zk", url])
    second = run = None
    try:
        client = KazooClient(hosts=zk.hosts)
        client.start(timeout=15)
        (node,) = client.get_children("/mesos")
        assert node.startswith("json.info_")
        info = json.loads(client.get(f"/mesos/{node}")[0])
        assert f"{info['address']['ip']}:{info['address']['port']}" == first.address

        run = run_scheduler(opts, "--master", url, "--state-dir", str(tmp_path / "state"))
        fid = run.wait_for(r"registered as framework (\S+)", 60).group(1)
        run.wait_for(r"chief:0 \| step 100 ", 120)
        first.kill(signal.SIGKILL)
        first.wait(30)
        # A new leader on another port, same agents (same work dir): it announces itself, the old
        # one's ephemeral node goes when its ZooKeeper session expires, and pymesos follows.
        second = LocalMaster(tmp_path / "master", extra=["--zk", url])
        assert second.address != first.address
        run.wait_for(rf"re-registered as framework {re.escape(fid)}", 90)
        assert run.proc.poll() is None, "the job runs on until the gate opens"
        gate.touch()
        assert run.wait(180) == 0, run.output[-4000:]
        client.stop()
    finally:
        if run is not None:
            run.killpg()
        for m in (second, first):
            if m is not None:
                m.stop()
        for p in task_processes("zk-leader"):
            p.kill()
    assert "job zk-leader SUCCEEDED" in run.output
    ids = re.findall(r"launch \S+ as (\S+)", run.output)
    assert len(ids) == len(set(ids))
    assert not wait_gone("zk-leader")
