"""Translation between the core's plain data and Mesos v1 JSON messages (the edge)."""
