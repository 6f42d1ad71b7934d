"""The client side: commands people type, and ``tfmesos.cluster()`` in their scripts.

``cli`` (``tfmesos ...``), ``entry`` (the console scripts' first code), status/logs/kill/restart
against a running job's API (``logs``, ``operate``), finished jobs (``records`` finds their kept
records, ``history`` prints them), douban/tfmesos' command line (``tfrun``, ``douban``) and
``cluster``. A command that runs a job hands it to ``tfmesos.scheduler``. May import anything
of tfmesos but ``localmesos`` internals.
"""
