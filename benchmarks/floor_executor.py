"""The floor arm's executor: the least a custom executor can do, to measure the agent's own launch path.

Run by the agent as ``python3 -S -I floor_executor.py`` (no site, no imports beyond the
interpreter's own modules): SUBSCRIBE to the agent; for the task it is given, start the task's
command (the task's data: the same ``/bin/sh -c`` gate loop as the other arms' tasks, so that their
load is the same), TASK_RUNNING, then TASK_FINISHED when the command exits 0, and exit. What the real agents
spend from "Launching executor" to its TASK_RUNNING with this executor is what any executor pays;
tfmesos' executor and Mesos' command executor are measured against it (benchmarks/real_gang.py).
"""
import base64
import http.client
import json
import os
import uuid


def main() -> None:
    host, port = os.environ["MESOS_AGENT_ENDPOINT"].rsplit(":", 1)
    framework = {"value": os.environ["MESOS_FRAMEWORK_ID"]}
    executor = {"value": os.environ["MESOS_EXECUTOR_ID"]}
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    stream = http.client.HTTPConnection(host, int(port))
    stream.request("POST", "/api/v1/executor", json.dumps({
        "type": "SUBSCRIBE", "framework_id": framework, "executor_id": executor, "subscribe": {}}), headers)
    events = stream.getresponse()
    calls = http.client.HTTPConnection(host, int(port))

    def update(task: dict, agent: dict, state: str) -> None:
        calls.request("POST", "/api/v1/executor", json.dumps({
            "type": "UPDATE", "framework_id": framework, "executor_id": executor, "update": {"status": {
                "task_id": task, "agent_id": agent, "state": state, "source": "SOURCE_EXECUTOR",
                "uuid": base64.b64encode(uuid.uuid4().bytes).decode()}}}), headers)
        calls.getresponse().read()

    agent: dict = {}
    while True:  # RecordIO: "<length>\n<json>"
        size = b""
        while not size.endswith(b"\n"):
            size += events.read(1)
        event = json.loads(events.read(int(size)))
        if event["type"] == "SUBSCRIBED":
            agent = event["subscribed"]["agent_info"]["id"]
        elif event["type"] == "LAUNCH":
            task = event["launch"]["task"]
            command = base64.b64decode(task["data"]).decode()
            pid = os.posix_spawn("/bin/sh", ["sh", "-c", command], os.environ)
            update(task["task_id"], agent, "TASK_RUNNING")
            _, code = os.waitpid(pid, 0)
            update(task["task_id"], agent, "TASK_FINISHED" if code == 0 else "TASK_FAILED")
            return
        elif event["type"] == "SHUTDOWN":
            return


if __name__ == "__main__":
    main()
