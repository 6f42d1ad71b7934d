"""The executor side: one process per task, started by the Mesos agent as
``python -m tfmesos.executor``.

``executor`` runs the task and reports its states, ``report_pipe`` reads what the task sends with
``tfmesos.report``. It starts cold for every task, so it imports little, and late: to subscribe,
``tfmesos.mesos``'s executor driver (standard library only); the wire, the ClusterSpec code and
``tfmesos.task.report``'s constants once the task arrives. ``preload`` lists those for a warm
interpreter that forks executors (the embedded agent's fork server). Never the scheduler or options.
"""
