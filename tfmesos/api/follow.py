"""How often ``tfmesos logs --follow`` (and the page) polls ``GET /v1/logs``: the client polls at
this interval, and the scheduler, at the job's end, lingers up to two of them for a follower's
last read. One number both sides must agree on."""

FOLLOW_POLL_SECONDS = 1.0
