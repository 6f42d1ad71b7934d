"""The embedded master's HTTP plumbing; imports nothing of ``master`` or ``agent``.

- ``server`` (HTTP/1.1 + RecordIO event streams), ``calls`` (decoding a call body),
  ``auth`` (Basic authentication, ACLs).
- ``protojson`` + ``schemas``: JSON -> protobuf as Mesos parses it.
"""
