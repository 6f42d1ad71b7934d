"""Options in, JobSpec out: the first stage of every run.

``files`` reads JSON/YAML, ``load`` applies the schema (defaults, merge, validation; every error
names its JSON path; ``schema_check``, the schema compiled into a yes/no, lets valid options skip
jsonschema), ``env`` maps options to ``TFMESOS_OPT_*`` variables, ``jobspec`` builds the
core's ``JobSpec``. May import ``tfmesos.core.spec`` and ``tfmesos.errors``; no I/O beyond reading
the file it is given.
"""
