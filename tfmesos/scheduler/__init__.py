"""The scheduler side: the process that runs one job from its first offer to its last record.

``runner`` (``tfmesos run``), ``job_scheduler`` (Mesos events into the core's ``Job``, its actions
out), ``embedded``/``child_master`` (the local master), ``http_api`` and ``web/`` (the API and the
page), ``metrics``, ``job_end`` (the final record), ``signals``, ``console``. May import the core,
``tfmesos.mesos``, ``tfmesos.store``, ``tfmesos.api`` and ``tfmesos.options``; never the client.
"""
