"""The scheduler side: the process that runs one job from its first offer to its last record.

``session`` (one running job: master, store, shell, API, driver; what ``tfmesos run``, ``tfrun`` and
``cluster()`` start), ``runner`` (``tfmesos run``), ``job_shell`` (the shell around the core's ``Job``,
its parts ``shell_events``, ``shell_actions``, ``shell_clock``, ``output_catchup``, ``task_places``: the
events of ``mesos.driver``'s adapter in, its actions out, recorded by ``store.job_store``),
``embedded``/``child_master`` (the local master), ``http_api`` and ``web/`` (the API and the page),
``metrics``, ``after_end`` (the final record, ``--keep-serving``), ``signals`` and ``signal_steps``,
``console``. May import the core, ``tfmesos.mesos``, ``tfmesos.store``, ``tfmesos.api`` and
``tfmesos.options``; never the client.
"""
