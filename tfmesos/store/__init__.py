"""Where a job's state outlives its scheduler: the persisted record and the kept history.

``format`` is the record's one shape and format number; ``state_store`` keeps it (state dir or
ZooKeeper); ``records`` finds finished jobs' records for the client. May import the core's plain
data and ``tfmesos.errors``.
"""
