"""Reports: history checks (python and Spark engines) and compliance reports."""
