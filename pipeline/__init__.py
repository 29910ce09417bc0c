"""The PySpark pipeline: the snapshot lake into per-minute and per-hour rollups and
anomaly flags (rollups.py, anomalies.py), and the census of the messages themselves read
straight from Redis by the ``rsmq`` Spark data source (source.py, census.py).

Transformations are functions from DataFrame to DataFrame; jobs.py reads, calls them and
writes; ``python -m pipeline`` runs a job. No Django import anywhere here: this code runs
on Spark executors.
"""
