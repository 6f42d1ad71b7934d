"""The embedded master's page and sandbox browser: what they serve, and nothing outside a sandbox."""
from __future__ import annotations

from localmesos.master.web_ui import index_page, sandbox_response


def _sandbox(tmp_path):
    run = tmp_path / "agents" / "A-S0" / "frameworks" / "F-0000" / "executors" / "job.chief.0.1" / "runs"
    (run / "c1").mkdir(parents=True)
    (run / "c1" / "stdout").write_text("hello <b>\n")
    (run / "latest").symlink_to("c1")
    (tmp_path / "secret").write_text("not yours")


def test_a_sandbox_is_listed_and_its_files_sent(tmp_path):
    _sandbox(tmp_path)
    listing = sandbox_response(tmp_path, "A-S0/F-0000/job.chief.0.1/")
    assert listing.status == 200 and b'href="/sandbox/A-S0/F-0000/job.chief.0.1/stdout"' in listing.body
    page = sandbox_response(tmp_path, "A-S0/F-0000/job.chief.0.1/stdout")
    assert (page.status, page.body) == (200, b"hello <b>\n")


def test_nothing_outside_a_sandbox_is_served(tmp_path):
    _sandbox(tmp_path)
    for rest in ("A-S0/F-0000/job.chief.0.1/../../../../../../../secret", "../../secret/x/y",
                 "A-S0/F-0000/job.chief.0.1/%2E%2E/%2E%2E/%2E%2E/%2E%2E/%2E%2E/%2E%2E/%2E%2E/secret",
                 "A-S0/F-0000/other/", "A-S0/F-0000"):
        assert sandbox_response(tmp_path, rest).status == 404, rest


def test_the_index_lists_agents_and_links_each_task_to_its_sandbox():
    state = {"version": "1.12.0", "slaves": [{"id": "A-S0", "pid": "slave(1)@127.0.0.1:1", "resources": {"cpus": 4.0}}],
             "frameworks": [{"id": "F-0000", "name": "j<1>", "tasks": [
                 {"id": "j.chief.0.1", "state": "TASK_RUNNING", "slave_id": "A-S0", "executor_id": "j.chief.0.1"}],
                 "completed_tasks": []}], "completed_frameworks": []}
    body = index_page(state).body.decode()
    assert "A-S0" in body and "cpus 4" in body and "j&lt;1&gt;" in body
    assert 'href="/sandbox/A-S0/F-0000/j.chief.0.1/"' in body
    assert "location.hash" in body  # a Mesos UI link (#/agents/...) is followed to /sandbox/...
