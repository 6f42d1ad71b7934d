"""The job's state as plain data (``record.py``), and the modules that own its fields."""
