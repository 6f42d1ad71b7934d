"""The scheduler's API as a contract: what ``tfmesos run`` serves and what its clients read.

Here: the API token as clients send it, the ``--follow`` poll interval (``follow``), the status snapshot's text (task table, progress line); the
snapshot itself is ``tfmesos.core.status.StatusSnapshot`` (pure data the core builds).
May import: ``tfmesos.core`` (plain data), ``tfmesos.masking``, ``tfmesos.errors``. Nothing that
starts a process or opens a socket: the client and the scheduler both import it.
"""
