"""localmesos/agent/ tested: containers, the fork server, the files API, task logs, recovery after a restart."""
