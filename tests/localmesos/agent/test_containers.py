"""Containers: a process group each (not a session), and destroy reaches every process of one."""
from __future__ import annotations

import json
import os
import signal

from tests.localmesos.sandbox_procs import assert_no_processes, processes_under
from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, launch, wait_until


def _start(master, scheduler: RawScheduler, task_id: str, command: str) -> None:
    offer = scheduler.next_offers()[0]
    assert launch(scheduler, offer, [command_task(task_id, offer["agent_id"]["value"], command)],
                  refuse_seconds=0).status == 202
    while scheduler.next_update(task_id=task_id)["state"] != "TASK_RUNNING":
        pass


def _group_leader(work_dir) -> int:
    """The container's main process: the one leading a process group in our session."""
    found: list[int] = []

    def leader() -> bool:
        found[:] = [p.pid for p in processes_under(work_dir) 
                    if os.getpgid(p.pid) == p.pid and os.getsid(p.pid) == os.getsid(0)]
        return len(found) == 1
    wait_until(leader, message="the container's group leader")
    return found[0]


def test_a_container_is_a_process_group_in_the_masters_session(make_master):
    # One session per container would make the kernel's autogroup scheduler give every container an
    # equal share of the CPU, whatever its threads want (training ran ~10% slower than by hand).
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("groups"))
    _start(master, scheduler, "sleeper", "sleep 60 & sleep 60")
    wait_until(lambda: len(processes_under(master.work_dir)) >= 3, message="the shell and both sleeps")
    leader = _group_leader(master.work_dir)
    members = processes_under(master.work_dir)
    assert {os.getpgid(p.pid) for p in members} == {leader}
    assert {os.getsid(p.pid) for p in members} == {os.getsid(0)}
    scheduler.teardown()
    scheduler.close()
    assert_no_processes(master.work_dir)


def test_strays_of_a_container_killed_with_sigkill_die_with_it(make_master):
    # The shell dies by kill -9; its setsid child has left the group and, reparented to init, the
    # tree: the agent still finds it (it carries the container's MESOS_DIRECTORY) and kills it.
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("strays"))
    _start(master, scheduler, "escapee", "setsid sleep 60 & sleep 60")
    wait_until(lambda: len(processes_under(master.work_dir)) >= 3, message="the shell and both sleeps")
    leader = _group_leader(master.work_dir)
    stray = [p for p in processes_under(master.work_dir) if os.getsid(p.pid) == p.pid]
    assert len(stray) == 1 and os.getpgid(stray[0].pid) != leader
    os.kill(leader, signal.SIGKILL)
    status = scheduler.next_update(task_id="escapee")
    assert (status["state"], status["message"]) == ("TASK_FAILED", "Command terminated with signal Killed")
    assert_no_processes(master.work_dir)
    assert not stray[0].is_running() or stray[0].status() == "zombie"
    scheduler.teardown()
    scheduler.close()


def test_the_recovery_record_is_the_json_of_the_container_and_its_live_tasks(tmp_path):
    from localmesos.agent.containers import AgentTask, Executor

    executor = Executor("f", "e", "c", {"executor_id": {"value": "e"}}, tmp_path, True, False, 1.0)
    running = AgentTask({"task_id": {"value": "a"}, "data": "eyJ4IjogMX0="}, state="TASK_RUNNING")
    executor.launched["a"] = running
    executor.queued["b"] = AgentTask({"task_id": {"value": "b"}})
    info = {"id": {"value": "f"}}
    made = []

    def fixed() -> dict:
        made.append(1)
        return {"framework_info": info, "pid": 7}
    first = json.loads(executor.checkpoint_text(fixed, (info,)))
    assert first == {"framework_info": info, "pid": 7, "tasks": [
        {"info": {"task_id": {"value": "b"}}, "state": "TASK_STAGING"}, {"info": running.info, "state": "TASK_RUNNING"}]}
    executor.update_task_state("a", "TASK_FINISHED")
    second = json.loads(executor.checkpoint_text(fixed, (info,)))
    assert second["tasks"] == [{"info": {"task_id": {"value": "b"}}, "state": "TASK_STAGING"}] and len(made) == 1
    info = {"id": {"value": "f"}, "name": "renamed"}  # a new FrameworkInfo: the fixed part is made again
    assert json.loads(executor.checkpoint_text(fixed, (info,)))["framework_info"]["name"] == "renamed"
