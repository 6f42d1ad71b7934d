"""A stdlib-only executor (v1 executor API by hand) for the planned-change traces (13-17).

It logs every event it receives as JSON lines in ``recorder.log`` in its sandbox (its cwd), so a
recorder or a test can read the ``KILL`` an agent sent it, ``kill_policy`` included. Behaviour:
TASK_RUNNING on LAUNCH; on KILL, TASK_KILLING then TASK_KILLED (it sends TASK_KILLING whatever the
framework's capabilities, as a custom executor may: only Mesos' own executors look at
TASK_KILLING_STATE); exits 0 once its killed task's update is acknowledged, or on SHUTDOWN.
"""
import base64
import http.client
import json
import os
import sys
import uuid

LOG = open("recorder.log", "a", buffering=1)


def log(**entry):
    LOG.write(json.dumps(entry) + "\n")


def post(body):
    host, port = os.environ["MESOS_AGENT_ENDPOINT"].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("POST", "/api/v1/executor", json.dumps(body),
                       {"Content-Type": "application/json", "Accept": "application/json"})
    response = connection.getresponse()
    response.read()
    connection.close()


def ids():
    return {"framework_id": {"value": os.environ["MESOS_FRAMEWORK_ID"]},
            "executor_id": {"value": os.environ["MESOS_EXECUTOR_ID"]}}


def update(task_id, state):
    status = {"task_id": task_id, "state": state, "source": "SOURCE_EXECUTOR",
              "uuid": base64.b64encode(uuid.uuid4().bytes).decode()}
    post({"type": "UPDATE", **ids(), "update": {"status": status}})
    return status["uuid"]


def main():
    host, port = os.environ["MESOS_AGENT_ENDPOINT"].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=600)
    body = {"type": "SUBSCRIBE", **ids(), "subscribe": {"unacknowledged_tasks": [], "unacknowledged_updates": []}}
    connection.request("POST", "/api/v1/executor", json.dumps(body),
                       {"Content-Type": "application/json", "Accept": "application/json"})
    response = connection.getresponse()
    buffer = b""
    killed_uuid = None
    while True:
        chunk = response.read1(65536)
        if not chunk:
            return 1
        buffer += chunk
        while b"\n" in buffer:
            size, _, rest = buffer.partition(b"\n")
            if len(rest) < int(size):
                break
            event = json.loads(rest[: int(size)])
            buffer = rest[int(size):]
            log(event=event)
            kind = event["type"]
            if kind == "LAUNCH":
                update(event["launch"]["task"]["task_id"], "TASK_RUNNING")
            elif kind == "KILL":
                update(event["kill"]["task_id"], "TASK_KILLING")
                killed_uuid = update(event["kill"]["task_id"], "TASK_KILLED")
            elif kind == "ACKNOWLEDGED" and event["acknowledged"]["uuid"] == killed_uuid:
                return 0
            elif kind == "SHUTDOWN":
                return 0


if __name__ == "__main__":
    sys.exit(main())
