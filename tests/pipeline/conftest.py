"""The pipeline's tests: the shared local[2] Spark session (``spark``) comes from
tests/support/pipeline_fixtures.py for every folder; a real standalone cluster
(``spark_cluster``, session-scoped) is this folder's own."""

from support.spark_standalone import spark_cluster  # noqa: F401  (a fixture)
