"""The agent's files API (/files/browse, /files/read, /files/debug) against trace 10-files.

The same command task as the recording runs on the embedded agent; then every recorded request
is replayed with the recorded sandbox path replaced by the live one, and the status, content
type and JSON shape of each reply must match the recording.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, http_call, launch
from tests.localmesos.traces import load

TRACE = load("10-files.jsonl")
RECORDED_DIR = TRACE[0]["directory"]
COMMAND = "echo line-one; echo line-two; echo err-line >&2; sleep 1"


def _finished_sandbox(make_master) -> tuple[str, str, str, str]:
    master = make_master()
    (agent,) = master.agent_endpoints.values()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("files"))
    offer = scheduler.next_offers()[0]
    assert launch(scheduler, offer, [command_task("files-demo", offer["agent_id"]["value"], COMMAND)]).status == 202
    while scheduler.next_update(task_id="files-demo")["state"] != "TASK_FINISHED":
        pass
    state = http_call(agent, "GET", "/state").body
    dirs = [e["directory"] for f in state["frameworks"] + state["completed_frameworks"]
            for e in f["executors"] + f["completed_executors"] if e["id"] == "files-demo"]
    assert len(dirs) == 1
    scheduler.close()
    return agent, dirs[0], scheduler.framework_id, master.address


def _live(value, directory: str):
    if isinstance(value, str):
        return value.replace(RECORDED_DIR, directory)
    if isinstance(value, dict):
        return {k: _live(v, directory) for k, v in value.items()}
    if isinstance(value, list):
        return [_live(v, directory) for v in value]
    return value


def test_files_api_replays_the_recorded_requests(make_master):
    agent, directory, framework_id, _ = _finished_sandbox(make_master)
    stdout = Path(directory, "stdout").read_bytes()
    assert stdout == b"line-one\nline-two\n"
    replayed = 0
    for rec in TRACE[1:]:
        if rec["request"] == "GET agent /files/debug":
            continue  # checked below: its keys name the live sandbox
        path = rec["request"].split()[-1]
        query = _live(rec["query"], directory)
        reply = http_call(agent, "GET", f"{path}?{urlencode(query)}")
        assert reply.status == rec["status"], (rec, reply)
        assert reply.headers.get("Content-Type") == rec["content_type"], (rec, reply)
        expected = _live(rec["body"], directory)
        if rec["status"] != 200:
            assert (reply.body or "") == expected, (rec, reply)
        elif path == "/files/browse":
            live = {e["path"]: e for e in reply.body}
            for entry in expected:
                got = live[entry["path"]]
                assert set(got) == set(entry)
                assert got["mode"] == entry["mode"] and got["nlink"] == entry["nlink"]
                assert isinstance(got["mtime"], float) and isinstance(got["uid"], str) and isinstance(got["gid"], str)
                assert got["size"] == Path(entry["path"]).stat().st_size
        elif query["path"].endswith("/stderr"):
            # The executor's own log lines differ from Mesos'; the task's line and the shape must not.
            assert set(reply.body) == {"data", "offset"} and reply.body["offset"] == 0
            assert "err-line\n" in reply.body["data"]
            assert reply.body["data"] == Path(directory, "stderr").read_text()[: len(reply.body["data"])]
        else:
            assert reply.body == expected, (rec, reply)
        replayed += 1
    assert replayed == len(TRACE) - 2

    debug = http_call(agent, "GET", "/files/debug")
    assert debug.status == 200
    virtual = f"/frameworks/{framework_id}/executors/files-demo/runs/latest"
    assert debug.body[virtual] == directory and debug.body[directory] == directory
    # The virtual path reads the same file.
    via_virtual = http_call(agent, "GET", f"/files/read?{urlencode({'path': virtual + '/stdout', 'offset': 0})}")
    assert via_virtual.body == {"data": "line-one\nline-two\n", "offset": 0}


def test_files_api_refuses_paths_outside_sandboxes(make_master):
    agent, directory, _, _ = _finished_sandbox(make_master)
    for path in ("/etc/passwd", directory + "/../../../../../../../etc/passwd", str(Path(directory).parent.parent)):
        reply = http_call(agent, "GET", f"/files/read?{urlencode({'path': path, 'offset': 0})}")
        assert reply.status == 404, path
    bad = http_call(agent, "GET", f"/files/read?{urlencode({'path': directory + '/stdout', 'offset': 'x'})}")
    assert bad.status == 400 and "offset" in bad.body
