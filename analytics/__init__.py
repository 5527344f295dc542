"""analytics: a PySpark job over captured traffic (arrives with its issue)."""
