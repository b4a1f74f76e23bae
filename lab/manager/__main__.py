"""`python -m lab.manager --config manager.json`: the cluster manager as a process of its own
(lab.manager.remote), until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from lab.ground.errors import LabError
from lab.manager.manager import ClusterManager
from lab.manager.remote import JsonlEvents, ManagerConfig, RemoteBrokers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.manager", description=__doc__)
    parser.add_argument("--config", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        config = ManagerConfig.read(args.config)
    except LabError as exc:
        print(f"lab.manager: error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    manager = ClusterManager(RemoteBrokers(config), config.settings, JsonlEvents(config.events))
    manager.start()
    stop.wait()
    manager.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
