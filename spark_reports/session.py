"""The Spark session the jobs run in: quiet, no UI, nothing bound beyond 127.0.0.1.

driver = start_driver(master)     the session, its JVM mapping the class archive, or
                                  recording it when this environment has none yet
finish_driver(driver, say)        the end of a report: a recording JVM is ended and its
                                  archive put in place (`class_archive`)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pyspark.sql import SparkSession

from spark_reports.class_archive import (
    Recording,
    archive_path,
    java_options,
    mapped_by,
    plan_recording,
    publish,
    recorded,
)
from spark_reports.defaults import DEFAULT_MASTER

__all__ = ["DEFAULT_MASTER", "Driver", "describe", "finish_driver", "spark_session", "start_driver"]

Say = Callable[[str], None]
ClassUse = Literal["mapped", "recording", "without", "shared"]
_EXIT_WAIT_S = 600.0


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


def _gateway_process() -> subprocess.Popen[bytes] | None:
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = None if gateway is None else getattr(gateway, "proc", None)
    return process if isinstance(process, subprocess.Popen) else None


@dataclass(frozen=True)
class Driver:
    """A report's session and what its JVM does with the class archive: `mapped` it,
    `recording` it (none yet), runs `without` it (no JVM found to key it, or the JVM did not
    map it), or `shared`: the session was running before (a test session), left as it is."""

    spark: SparkSession
    classes: ClassUse
    recording: Recording | None
    started_s: float


def start_driver(master: str = DEFAULT_MASTER, *, app_name: str = "lab-report") -> Driver:
    """The session for a report. When this call starts the JVM and the environment has no
    class archive for it, the JVM records one (`finish_driver` puts it in place)."""
    started = time.perf_counter()
    if _gateway_process() is not None:
        return Driver(spark_session(master, app_name=app_name), "shared", None, 0.0)
    recording = plan_recording()
    spark = spark_session(
        master,
        app_name=app_name,
        record_classes=None if recording is None else recording.partial,
    )
    process, path = _gateway_process(), archive_path()
    classes: ClassUse = "recording" if recording is not None else "without"
    if recording is None and process is not None and path is not None:
        classes = "mapped" if mapped_by(process.pid, path) else "without"
    return Driver(spark, classes, recording, time.perf_counter() - started)


def describe(driver: Driver) -> str:
    """The driver's start in words, for the report's progress lines."""
    if driver.classes == "shared":
        return "spark: using the session already running"
    said = {
        "mapped": "class archive mapped",
        "recording": "no class archive yet: recording one for the next reports",
        "without": "without a class archive",
    }[driver.classes]
    return f"spark: started in {driver.started_s:.1f} s ({said})"


def finish_driver(driver: Driver, say: Say) -> Path | None:
    """End a recording driver: stop Spark, let its JVM exit (it dumps the classes as it
    goes) and publish the archive; the archive's path when one was put in place. Any other
    driver is left running (it ends with this process)."""
    recording = driver.recording
    if recording is None:
        return None
    from pyspark import SparkContext

    process = _gateway_process()
    status: int | None = None
    try:
        driver.spark.stop()
        gateway = SparkContext._gateway
        if gateway is not None:
            gateway.shutdown()
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()  # the gateway JVM exits when its stdin closes
            try:
                status = process.wait(timeout=_EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    finally:
        SparkContext._gateway = None
        SparkContext._jvm = None
        published = publish(recording.partial, recording.final, status)
    if published:
        say(f"spark: class archive recorded into {recording.final}; the next reports map it")
        return recording.final
    say(f"spark: the recording JVM exited with {status}; no class archive (reports run without)")
    return None
