"""The user's start command for one node: `python -m lab_example.node --config FILE`.

The broker here is the lab's reference broker (broker_ref), started the user's way: this
launcher says on stderr which settings the node runs with, then runs the broker in this
same process (so a fault that kills the node's process kills the broker itself).
"""

from __future__ import annotations

import json
import runpy
import sys


def main() -> None:
    config = sys.argv[sys.argv.index("--config") + 1]
    with open(config, encoding="utf-8") as f:
        settings = json.load(f)
    shown = {k: settings[k] for k in ("name", "election_timeout_s", "max_connections")}
    print(f"lab_example: starting {shown}", file=sys.stderr, flush=True)
    sys.argv = ["broker_ref", "--config", config]
    runpy.run_module("broker_ref", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
