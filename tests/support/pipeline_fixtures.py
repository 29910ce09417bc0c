"""The pipeline under test: one Spark session, local[2], for the whole test run (starting
one takes seconds). Row builders are in support/pipeline_rows.py.

tests/conftest.py loads it for every folder (pyspark is imported only when a test asks
for ``spark``). Without Java the
pipeline's tests are skipped, saying so; with it they run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from pipeline.spark import java_problem

    problem = java_problem()
    if problem:
        pytest.skip(problem)
    from pipeline.spark import session

    # Two shuffle partitions: the frames here have a few rows; more would only add tasks.
    spark = session("local[2]", app="rsmq-tests", conf={"spark.sql.shuffle.partitions": 2})
    yield spark
    spark.stop()
