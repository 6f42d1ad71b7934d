"""Can a job ever fit the cluster as built, and what holds a job that fits back (plain data)."""
import pytest

from tfmesos.core.placement.fit import Agent, Framework, Need, amounts, holders, never_fits
from tfmesos.core.placement.queue import queued_reason


def agent(i, cpus=1.0, mem=1024.0, gpus=0.0, used=None, offered=None, reserved=None):
    return Agent(f"S{i}", f"h{i}", {"cpus": cpus, "mem": mem, "disk": 0.0, "gpus": gpus},
                 used or {}, offered or {}, reserved or {})


def need(count=2, cpus=0.5, mem=128.0, gpus=0.0, role="worker"):
    return Need(role, count, {"cpus": cpus, "mem": mem, "disk": 0.0, "gpus": gpus})


TWO = [agent(0), agent(1)]


def test_a_job_that_fits_the_idle_cluster_is_not_refused():
    assert never_fits([need(count=4, cpus=0.45)], TWO, ["*"]) is None


def test_a_task_larger_than_every_agent_names_the_resource_and_the_largest_agent():
    why = never_fits([need(count=1, cpus=1.6)], TWO, ["*"])
    assert why is not None and "one worker task needs cpus 1.6" in why and "largest of its 2 agent(s) has cpus 1" in why
    why = never_fits([need(count=1, mem=4096)], TWO, ["*"])
    assert why is not None and "mem 4096 MB" in why and "cpus" not in why.split("needs")[1]


def test_a_gang_larger_than_all_agents_together_names_the_total():
    why = never_fits([need(count=5, cpus=0.45)], TWO, ["*"])
    assert why is not None and "5 tasks need cpus 2.25 together" in why and "together have cpus 2" in why


def test_a_gang_that_fits_in_sum_but_does_not_pack_fails_too():
    # 3 x 0.6 cpus = 1.8 <= 2, but one 1-cpu agent holds only one such task.
    why = never_fits([need(count=3, cpus=0.6)], TWO, ["*"])
    assert why is not None and "do not pack" in why and "1 task(s) left over" in why


def test_gpus_on_a_cluster_without_any_fail_and_gpu_agents_serve_no_cpu_only_job():
    why = never_fits([need(count=1, gpus=1)], TWO, ["*"])
    assert why is not None and "worker ask(s) for gpus" in why and "none of its 2 agent(s) has any gpus" in why
    assert never_fits([need(count=1, gpus=1)], [agent(0, gpus=1)], ["*"]) is None
    # Mesos offers an agent with GPUs only to GPU frameworks: a cpu-only job counts on the others.
    why = never_fits([need(count=2, cpus=0.8)], [agent(0), agent(1, cpus=8, gpus=2)], ["*"])
    assert why is not None and "never fit" in why


def test_reservations_for_other_roles_are_not_usable_ours_are():
    reserved = agent(0, reserved={"team-b": {"cpus": 0.8, "mem": 512}})
    assert never_fits([need(count=1, cpus=0.5)], [reserved], ["team-a"]) is not None
    assert never_fits([need(count=1, cpus=0.5)], [reserved], ["team-b"]) is None


def test_no_agent_known_says_nothing():
    assert never_fits([need()], [], ["*"]) is None


def test_the_queued_reason_says_what_it_needs_what_is_free_and_who_holds_the_rest():
    busy = [agent(0, used={"cpus": 0.9, "mem": 256}), agent(1, used={"cpus": 0.9, "mem": 256},
                                                             reserved={"team-b": {"cpus": 0.1}})]
    figures = holders(busy, ["*"], {}, [Framework("F1", "job-a", "*", {"cpus": 1.8, "mem": 512}), Framework("F2", "idle", "*", {})])
    text = queued_reason({"cpus": 1.0, "mem": 256.0}, figures)
    assert text.startswith("queued (the cluster fits the job, but not now): needs cpus 1, mem 256 MB")
    assert "free cpus 0.1, mem 1536 MB of cpus 1.9, mem 2048 MB" in text
    assert "held by other frameworks cpus 1.8, mem 512 MB: job-a (*) cpus 1.8, mem 512 MB" in text
    assert "idle" not in text, "a framework that holds nothing is not named"
    assert "reserved for other roles cpus 0.1" in text


def test_what_the_job_holds_itself_counts_as_free_for_it():
    offered = [agent(0, offered={"cpus": 1.0, "mem": 1024})]
    figures = holders(offered, ["*"], {"cpus": 1.0, "mem": 1024}, [])
    assert figures["free"]["cpus"] == 1.0 and figures["others"]["cpus"] == 0.0


def fpga_need(count=1, fpgas=1.0):
    return Need("worker", count, {"cpus": 0.5, "mem": 128.0, "fpgas": fpgas})


def test_a_custom_scalar_no_agent_has_never_fits_naming_it():
    why = never_fits([fpga_need()], TWO, ["*"])
    assert why == ("the job can never fit this cluster: worker ask(s) for fpgas, and none of its 2 agent(s) "
                   "has any fpgas")


def test_a_custom_scalar_is_checked_like_cpus_per_task_and_in_sum():
    with_fpgas = [Agent("S0", "h0", {"cpus": 4.0, "mem": 4096.0, "fpgas": 2.0}), agent(1)]
    assert never_fits([fpga_need(count=2)], with_fpgas, ["*"]) is None
    why = never_fits([fpga_need(fpgas=3)], with_fpgas, ["*"])
    assert why is not None and "one worker task needs fpgas 3" in why and "has fpgas 2" in why
    why = never_fits([fpga_need(count=3)], with_fpgas, ["*"])
    assert why is not None and "3 tasks need fpgas 3 together" in why and "together have fpgas 2" in why


def test_a_custom_scalar_taken_by_others_queues_naming_it():
    busy = [Agent("S0", "h0", {"cpus": 4.0, "mem": 4096.0, "fpgas": 2.0}, used={"cpus": 1.0, "fpgas": 2.0})]
    assert never_fits([fpga_need()], busy, ["*"]) is None  # fits the cluster as built
    figures = holders(busy, ["*"], {}, [Framework("F1", "job-a", "*", {"cpus": 1.0, "fpgas": 2.0})])
    text = queued_reason({"cpus": 0.6, "mem": 192.0, "fpgas": 1.0}, figures)
    assert "needs cpus 0.6, mem 192 MB, fpgas 1" in text and "free cpus 3, mem 4096 MB, fpgas 0 of" in text
    assert "job-a (*) cpus 1, fpgas 2" in text


def test_the_jobs_own_tasks_still_ending_are_not_another_frameworks_and_do_not_queue_it_alone():
    """A whole-job restart: its killed workers still hold cpus 1.8 on the agents (the master counts
    them used by its own framework); nothing else runs. Not queued: no 'held by other frameworks'."""
    busy = [agent(0, used={"cpus": 0.9, "mem": 1088}), agent(1, used={"cpus": 0.9, "mem": 1088})]
    figures = holders(busy, ["*"], {}, [], own={"cpus": 1.8, "mem": 2176})
    assert figures["others"]["cpus"] == 0.0 and figures["own_ending"]["cpus"] == 1.8
    assert figures["free"]["cpus"] == pytest.approx(0.2), "what its own ending tasks hold is not free yet"
    assert queued_reason({"cpus": 1.8, "mem": 2176.0}, figures) == ""


def test_with_another_framework_too_the_figures_add_up():
    busy = [agent(0, used={"cpus": 0.9, "mem": 256}), agent(1, used={"cpus": 0.5, "mem": 256})]
    figures = holders(busy, ["*"], {}, [Framework("F1", "job-a", "*", {"cpus": 0.5, "mem": 256})],
                      own={"cpus": 0.9, "mem": 256})
    text = queued_reason({"cpus": 1.8, "mem": 512.0}, figures)
    assert ("needs cpus 1.8, mem 512 MB; free cpus 0.6, mem 1536 MB of cpus 2, mem 2048 MB; "
            "held by other frameworks cpus 0.5, mem 256 MB: job-a (*) cpus 0.5, mem 256 MB; "
            "held by this job's own tasks cpus 0.9, mem 256 MB") in text, text


def test_amounts_read_as_mesos_keeps_them_not_as_float_dust():
    """Free cpus computed from offers (2 - 1.9 - 0.1) once printed as "free cpus 8.32667e-17" (CI, stop 42)."""
    dust = 2 - 1.9 - 0.1
    assert dust != 0
    assert amounts({"cpus": dust, "mem": 0.0}, ["cpus", "mem"], zeros=True) == "cpus 0, mem 0 MB"
    assert amounts({"cpus": 1.1 + 2.2, "mem": 1856.0}) == "cpus 3.3, mem 1856 MB"
    assert amounts({"cpus": -dust}, ["cpus"], zeros=True) == "cpus 0"
