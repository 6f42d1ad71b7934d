"""Options in, JobSpec out: the first stage of every run.

``files`` reads JSON/YAML, ``load`` applies the schema (defaults, merge, validation; every error
names its JSON path), ``env`` maps options to ``TFMESOS_OPT_*`` variables, ``jobspec`` builds the
core's ``JobSpec``. May import ``tfmesos.core.spec`` and ``tfmesos.errors``; no I/O beyond reading
the file it is given.
"""
