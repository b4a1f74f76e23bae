"""Docker benchmarks: image build time from nothing, and startup to the first acknowledged send.

`lab bench startup --backend docker` and an image-build benchmark call these; each
reports progress through `say` and returns seconds.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from lab.backends.docker.cluster import DockerCluster
from lab.backends.docker.engine import Say
from lab.backends.docker.images import build_images, remove_images
from lab.bench.probe import send_one
from lab.ground.spec import Durability, Topology
from lab.targets.broker_ref import BrokerRefTarget

__all__ = ["measure_image_build", "measure_startup"]


def measure_startup(nodes: int, say: Say) -> float:
    """Seconds from `start` (networks, volumes, Toxiproxy, proxies, nodes) to the first
    acknowledged message through a client proxy; the images are built beforehand."""
    build_images(say)
    with tempfile.TemporaryDirectory(prefix="lab-bench-docker-") as tmp:
        started = time.perf_counter()
        cluster = DockerCluster(
            Topology(nodes=nodes), Durability(), BrokerRefTarget(), Path(tmp), say=say
        )
        try:
            master = cluster.start(timeout_s=60.0)
            send_one(cluster.client_urls()[cluster.node_names.index(master)])
            seconds = time.perf_counter() - started
        finally:
            cluster.stop()
    say(f"{nodes} node(s) in containers: first acknowledged message after {seconds:.2f} s")
    return seconds


def measure_image_build(say: Say) -> float:
    """Seconds to build every lab image from nothing (the lab's images removed first)."""
    removed = remove_images(say)
    say(f"removed {removed} lab image(s); building from nothing")
    started = time.perf_counter()
    build_images(say)
    seconds = time.perf_counter() - started
    say(f"built the lab's images in {seconds:.1f} s")
    return seconds
