"""The agents. May import ``localmesos.http`` and the shared model.

- ``agent`` (one agent's bookkeeping), ``containers`` (its records: frameworks, executor runs,
  tasks), ``executor_sessions`` (the agent's half of the v1 executor API), ``executor_api``
  (routes and executor-call checks), ``files_api`` (``/files``), ``sandbox`` (layout, executor
  environment), ``secrets`` (Mesos' default secret resolver: VALUE secrets in the environment and
  SECRET volumes; references fail the launch), ``fetcher`` (URIs), ``command_executor`` (the
  built-in command executor).
- Processes: ``procs`` (process groups, exits, kills), ``forkserver`` + ``zygote`` (Python
  executors forked from a warm interpreter instead of exec'd), ``recovery`` (checkpoints; what a
  restart with the same work_dir adopts or kills), ``freeze`` (an agent stopped as SIGSTOP stops a
  mesos-agent, and continued: the twin of a partitioned agent).
"""
