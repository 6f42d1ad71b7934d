"""What `tfmesos local-master` says about itself at start, from its /state agents (pure)."""
from __future__ import annotations

from localmesos.cli import describe


def _agent(gpus: float, ports: str, reserved: dict | None = None) -> dict:
    return {"resources": {"cpus": 4.0, "mem": 8192.0, "disk": 20000.0, "gpus": gpus, "ports": ports},
            "reserved_resources": reserved or {}}


def test_alike_agents_share_a_line_and_the_gpu_agents_are_named():
    agents = [_agent(0, "[31000-31999]"), _agent(0, "[32000-32999]", {"team-a": {"cpus": 2.0, "mem": 0.0}}),
              _agent(0, "[33000-33999]"), _agent(1, "[34000-34999]")]
    lines = describe(agents, "/tmp/work", "127.0.0.1:5050")
    assert lines[:3] == ["  agents 0, 2: cpus 4, mem 8192 MB, disk 20000 MB, gpus 0",
                         "  agent 1: cpus 4, mem 8192 MB, disk 20000 MB, gpus 0; reserved: team-a cpus 2",
                         "  agent 3: cpus 4, mem 8192 MB, disk 20000 MB, gpus 1"]
    assert ("  task ports: agent 0 31000-31999, agent 1 32000-32999, agent 2 33000-33999, agent 3 34000-34999"
            in lines), "every agent's range"
    assert "  work dir (sandboxes): /tmp/work" in lines
    note = next(line for line in lines if "note:" in line)
    assert "agent(s) 3 have GPUs" in note and "a CPU job runs on the other agents" in note
    assert lines[-1].startswith("  run a job on it: tfmesos run options.json --master 127.0.0.1:5050")


def test_all_gpu_agents_warn_that_a_cpu_job_gets_no_offer():
    lines = describe([_agent(1, "[31000-31099]") for _ in range(4)], "/w", "127.0.0.1:1")
    assert lines[0] == "  agents 0-3: cpus 4, mem 8192 MB, disk 20000 MB, gpus 1"
    assert any("every agent has GPUs" in line and "a CPU job gets no offer here" in line for line in lines)


def test_no_gpu_note_without_gpus():
    assert not [line for line in describe([_agent(0, "[1-2]")], "/w", "h:1") if "GPU" in line]


def test_a_cpu_job_on_embedded_gpu_agents_is_refused_naming_the_flag():
    from tfmesos.scheduler.preflight import local_fit_problems
    from tfmesos.options.load import resolve_options
    from tfmesos.scheduler.runner import RunSettings
    from tfmesos.options.jobspec import job_spec_from_options

    def spec(gpus: int):
        return job_spec_from_options(resolve_options(
            {"job": {"command": "true"}, "roles": {"worker": {"count": 1, "gpus": gpus}}}))

    problems = local_fit_problems(spec(0), RunSettings(gpus_per_agent=1))
    assert [p for p in problems if p.startswith("--gpus-per-agent: 1 ") and "GPU_RESOURCES" in p], problems
    assert local_fit_problems(spec(1), RunSettings(gpus_per_agent=1)) == []
    assert local_fit_problems(spec(0), RunSettings(gpus_per_agent=0)) == []


def test_any_other_scalar_an_agent_was_given_is_shown_too():
    fpga = _agent(0, "[31000-31999]", {"team-a": {"cpus": 0.0, "fpgas": 1.0}})
    fpga["resources"]["fpgas"] = 2.0
    lines = describe([fpga, _agent(0, "[32000-32999]")], "/w", "127.0.0.1:1")
    assert lines[:2] == ["  agent 0: cpus 4, mem 8192 MB, disk 20000 MB, gpus 0, fpgas 2; reserved: team-a fpgas 1",
                         "  agent 1: cpus 4, mem 8192 MB, disk 20000 MB, gpus 0"]
