"""The functional core: pure decisions over plain data (no I/O, no threads, no clocks)."""
