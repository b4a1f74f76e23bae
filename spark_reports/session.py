"""The Spark session the jobs run in: quiet, no UI, nothing bound beyond 127.0.0.1."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession

from spark_reports.class_archive import java_options, recorded
from spark_reports.defaults import DEFAULT_MASTER

__all__ = ["DEFAULT_MASTER", "spark_session"]


_LOG_CONFIG = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _log_config_file() -> Path:
    """Spark's log4j2 configuration (errors only): one file named by its content, shared by
    every report process (one per process piled up in the temporary directory), written
    to a temporary name and renamed so a JVM never reads half of it."""
    digest = hashlib.sha256(_LOG_CONFIG.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"lab-report-log4j2-{digest}.properties"
    if not path.is_file():
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_text(_LOG_CONFIG, encoding="utf-8")
        os.replace(partial, path)
    return path


def _on_this_machine(master: str) -> bool:
    """A local master, or a standalone master on the loopback address."""
    return master.startswith("local") or any(
        master.startswith(f"spark://{host}:") for host in ("127.0.0.1", "localhost")
    )


def spark_session(
    master: str = DEFAULT_MASTER,
    *,
    app_name: str = "lab-report",
    record_classes: Path | None = None,
) -> SparkSession:
    """Get (or reuse) the session for `master`: log level ERROR, no UI, loopback only.

    The driver's JVM maps the class archive (`class_archive`) when there is one, or, given
    `record_classes`, records the classes it loads into that file when it exits.

    On this machine the driver binds to 127.0.0.1 (the JVM reads SPARK_LOCAL_IP when it
    starts, so it is set before the first session of the process) and shuffles into few
    partitions; a remote cluster keeps its own network settings.
    """
    # Python tasks (the per-run latency histograms) run this interpreter, which has the lab's
    # packages: on a cluster, the same path on every executor.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    classes = recorded(record_classes) if record_classes is not None else java_options()
    driver_options = f"-Dlog4j2.configurationFile={_log_config_file().as_uri()} {classes}"
    if _on_this_machine(master):
        # A report is many short jobs: C2's compilations cost more CPU than they save
        # (about a third of the CPU on two cores), so the JVM compiles with C1 only; and
        # the throughput collector's pauses cost less than G1's concurrent threads there.
        driver_options += " -XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", driver_options.strip())
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.driver.memory", "4g")
    )
    if _on_this_machine(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (
            builder.config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "8")
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
