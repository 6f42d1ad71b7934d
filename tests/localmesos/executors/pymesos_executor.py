"""A tiny pymesos executor used by the tests (runs as a real subprocess).

Task ``data`` (base64 JSON) may say {"finish_on": "<message>"}: the task then
finishes when that framework message arrives.  Every framework message is
answered with "pong:<message>".
"""
import json
import sys
import threading

from pymesos import Executor, MesosExecutorDriver, decode_data, encode_data


class EchoExecutor(Executor):
    def __init__(self) -> None:
        self.tasks: dict[str, dict] = {}
        self.lock = threading.Lock()

    def launchTask(self, driver, task):  # noqa: N802 (pymesos API)
        spec = json.loads(decode_data(task["data"])) if task.get("data") else {}
        with self.lock:
            self.tasks[task["task_id"]["value"]] = spec
        driver.sendStatusUpdate({"task_id": task["task_id"], "state": "TASK_RUNNING",
                                 "message": "running in pymesos executor"})

    def frameworkMessage(self, driver, message):  # noqa: N802
        text = decode_data(message).decode("utf-8")
        driver.sendFrameworkMessage(encode_data(("pong:" + text).encode("utf-8")))
        with self.lock:
            done = [tid for tid, spec in self.tasks.items() if spec.get("finish_on") == text]
            for tid in done:
                del self.tasks[tid]
        for tid in done:
            driver.sendStatusUpdate({"task_id": {"value": tid}, "state": "TASK_FINISHED",
                                     "message": "finished on " + text})

    def killTask(self, driver, task_id):  # noqa: N802
        with self.lock:
            self.tasks.pop(task_id["value"], None)
        driver.sendStatusUpdate({"task_id": task_id, "state": "TASK_KILLED"})


if __name__ == "__main__":
    if "--recovering" in sys.argv:  # the v1 recovery rules (tfmesos' driver): back within the agent's 2 s
        from tfmesos.mesos.executor_driver import RecoveringExecutorDriver as MesosExecutorDriver
    driver = MesosExecutorDriver(EchoExecutor())
    sys.exit(0 if driver.run() is None else 1)
