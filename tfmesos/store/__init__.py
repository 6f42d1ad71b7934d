"""Where a job's state outlives its scheduler: the persisted record and the kept history.

``format`` is the record's one shape and format number; ``job_store`` writes and resumes it;
``state_store`` keeps it (state dir or ZooKeeper; the client finds kept records with
``tfmesos.client.records``). May import the core's plain data and ``tfmesos.errors``.
"""
