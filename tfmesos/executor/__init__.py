"""The executor side: one process per task, started by the Mesos agent as
``python -m tfmesos.executor``.

``executor`` runs the task and reports its states, ``report_pipe`` reads what the task sends with
``tfmesos.report``. It starts cold for every task, so it imports little: ``tfmesos.mesos``'s
executor driver and wire, and ``tfmesos.task.report``'s constants. Never the scheduler or options.
"""
