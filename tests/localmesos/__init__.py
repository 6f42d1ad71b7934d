"""Tests of localmesos, the embedded Mesos master, folder by folder as the package is: master/
(offers, tasks, frameworks, agent health, the page), agent/ (containers, sandboxes, files,
recovery), http/ (the wire against the recorded traces, real pymesos drivers); here its command
line and the helpers they share: scheduler_client.py (a raw v1 scheduler over http.client),
sandbox_procs.py (processes left under a work dir), traces.py (reading tests/data/mesos-traces),
and executors/ (raw_executor.py, pymesos_executor.py: test executors that agents run as processes)."""
