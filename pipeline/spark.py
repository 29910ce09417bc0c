"""The Spark session the jobs run in: ``local[*]`` by default, any cluster by its master
URL; the web UI off and the logs at WARN unless asked; and the Java check (Spark runs on
a JVM, Java 17 or newer).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a session is made: java_problem() needs no PySpark
    from pyspark.sql import SparkSession

MIN_JAVA = 17
NEEDS = f"the pipeline runs on Spark, which needs Java {MIN_JAVA}+"
INSTALL = "install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
LOG4J = Path(__file__).with_name("log4j2.properties")
ROOT = Path(__file__).resolve().parent.parent


def java_problem() -> str | None:
    """Why Spark can't start here (no Java, or one older than 17), in one line; None: fine.

    Looks where PySpark looks: ``$JAVA_HOME/bin/java``, else ``java`` on PATH.
    """
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home, "bin", "java")) if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH"
        return f"{NEEDS}: {where}; {INSTALL}"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{NEEDS}: {java} failed ({e}); {INSTALL}"
    major = java_major(out)
    if major is not None and major < MIN_JAVA:
        return f"{NEEDS}: {java} is Java {major}; {INSTALL}"
    return None


def java_major(version_output: str) -> int | None:
    """17 from ``openjdk version "17.0.15"``, 8 from ``java version "1.8.0_392"``."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def session(
    master: str = "local[*]",
    app: str = "rsmq-pipeline",
    log_level: str = "WARN",
    ui: bool = False,
    conf: Mapping[str, Any] | None = None,
) -> SparkSession:
    """The Spark session (the running one if this process has one already: its master
    stays). Times are UTC, and overwriting a partitioned output replaces only the
    partitions written."""
    from pyspark.sql import SparkSession

    local = is_local(master)
    if local:
        # The Python workers run this interpreter (its virtualenv, with redis and pyarrow);
        # on a cluster the executors' own Python is set by PYSPARK_PYTHON there.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", str(ui).lower())
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
        # Timestamps as UTC instants (not legacy INT96): pyarrow reads them back as UTC.
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J.as_uri()}")
    )
    if local:
        # Few, large shuffle partitions: the default 200 is for clusters.
        builder = builder.config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 2)))
    for key, value in (conf or {}).items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    # py4j logs every connection it opens and closes at INFO.
    logging.getLogger("py4j").setLevel(
        max(
            logging.WARNING,
            logging.getLevelName(log_level)
            if isinstance(logging.getLevelName(log_level), int)
            else logging.WARNING,
        )
    )
    if not local:
        ship_code(spark)
    return spark


@contextmanager
def running(master: str) -> Iterator[SparkSession]:
    """A Spark session for a block: this process's own if it has one already (tests, a
    shell), left running after; else a new one, stopped after."""
    from pyspark.sql import SparkSession

    before = SparkSession.getActiveSession()
    spark = session(master)
    try:
        yield spark
    finally:
        if before is None:
            spark.stop()


def ship_code(spark: SparkSession) -> None:
    """Send ``pipeline/`` and ``queues/`` to the executors (they still need pyspark's own
    dependencies, redis and pyarrow installed)."""
    target = Path(tempfile.mkdtemp(prefix="rsmq-pipeline-")) / "rsmq_pipeline.zip"
    with zipfile.ZipFile(target, "w") as z:
        for package in ("pipeline", "queues"):
            for path in (ROOT / package).rglob("*"):
                if path.is_file() and "__pycache__" not in path.parts:
                    z.write(path, path.relative_to(ROOT))
    spark.sparkContext.addPyFile(str(target))
