"""localmesos/http/ tested: replays of the recorded Mesos 1.12 traces, and real pymesos drivers on the wire."""
