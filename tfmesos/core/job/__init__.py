"""The job's decisions, one module per kind of event, and the ``Job`` the shell drives (``job.py``)."""
