"""A stdlib-only executor speaking the v1 executor API by hand (like the recorder's).

It records its environment and every call/event as JSON lines in
``recorder.log`` inside its sandbox (its cwd).  Behaviour (trace 07): UPDATE
TASK_RUNNING on LAUNCH; on MESSAGE reply "pong: <text>" and finish the task;
exit 0 on SHUTDOWN. With ``--resubscribe``: on LAUNCH it subscribes again, as after an agent
restart, carrying a TASK_FINISHED it never sent as its one unacknowledged update, then waits for
the agent's ACKNOWLEDGED of it (logged like every event) and exits.
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
    payload = response.read()
    log(call=body, http_status=response.status, response_headers=dict(response.getheaders()),
        response_body=payload.decode() or None)
    connection.close()


def ids():
    return {"framework_id": {"value": os.environ["MESOS_FRAMEWORK_ID"]},
            "executor_id": {"value": os.environ["MESOS_EXECUTOR_ID"]}}


def update(task_id, state, message=None):
    status = {"task_id": task_id, "state": state, "source": "SOURCE_EXECUTOR",
              "uuid": base64.b64encode(uuid.uuid4().bytes).decode()}
    if message:
        status["message"] = message
    post({"type": "UPDATE", **ids(), "update": {"status": status}})


def main(unacknowledged=None):
    if unacknowledged is None:
        log(env=dict(os.environ), argv=sys.argv, cwd=os.getcwd())
    host, port = os.environ["MESOS_AGENT_ENDPOINT"].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    pending = [] if unacknowledged is None else [{"status": unacknowledged}]
    body = {"type": "SUBSCRIBE", **ids(), "subscribe": {"unacknowledged_tasks": [], "unacknowledged_updates": pending}}
    connection.request("POST", "/api/v1/executor", json.dumps(body),
                       {"Content-Type": "application/json", "Accept": "application/json"})
    response = connection.getresponse()
    log(call=body, http_status=response.status, response_headers=dict(response.getheaders()))
    buffer = b""
    task_id = None
    while True:
        chunk = response.read1(65536)
        if not chunk:
            log(eof=True)
            return 1
        buffer += chunk
        while b"\n" in buffer:
            size, _, rest = buffer.partition(b"\n")
            if len(rest) < int(size):
                break
            frame = buffer[: len(size) + 1 + int(size)]
            event = json.loads(rest[: int(size)])
            buffer = rest[int(size):]
            log(event=event, raw=frame.decode())
            kind = event["type"]
            if kind == "LAUNCH" and "--resubscribe" in sys.argv:
                connection.close()
                task_id = event["launch"]["task"]["task_id"]
                return main({"task_id": task_id, "state": "TASK_FINISHED", "source": "SOURCE_EXECUTOR",
                             "uuid": base64.b64encode(uuid.uuid4().bytes).decode()})
            if kind == "ACKNOWLEDGED" and unacknowledged is not None:
                return 0 if event["acknowledged"]["uuid"] == unacknowledged["uuid"] else 3
            if kind == "LAUNCH":
                task_id = event["launch"]["task"]["task_id"]
                update(task_id, "TASK_RUNNING")
            elif kind == "MESSAGE":
                text = base64.b64decode(event["message"]["data"]).decode()
                reply = base64.b64encode(("pong: " + text).encode()).decode()
                post({"type": "MESSAGE", **ids(), "message": {"data": reply}})
                update(task_id, "TASK_FINISHED", "finished after MESSAGE")
            elif kind == "SHUTDOWN":
                return 0


if __name__ == "__main__":
    sys.exit(main())
