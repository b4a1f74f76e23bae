"""`lab up`, `lab down`, `lab images`, `lab rig`: clusters that outlive the command, images,
and the namespace rig a person tries the hosts backend on."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lab.cli.common import DEFAULT_STATE_DIR, Commands, say
from lab.ground.errors import UsageError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    """Add this part's subcommands to `sub`; return their handlers by name."""
    up = sub.add_parser("up", help="start a cluster behind Toxiproxy and leave it running")
    up.add_argument("--nodes", type=int, default=1, help="how many nodes (default 1)")
    up.add_argument("--backend", default="process", help="process (default), docker or ssh")
    up.add_argument("--hosts", type=Path, metavar="FILE", help="the hosts file of --backend ssh")
    up.add_argument("--target", default="broker_ref", help="broker_ref, qpid-broker-j or artemis")
    up.add_argument(
        "--target-setting",
        action="append",
        metavar="KEY=VALUE",
        help="a setting of the target's own (repeatable; artemis: failback=false …)",
    )
    up.add_argument(
        "--toxiproxy-port", type=int, help="the Toxiproxy API port (default: a free one)"
    )
    up.add_argument(
        "--mode",
        help="replicated-group (default) or active-passive (with a cluster manager; a "
        "target whose brokers activate themselves, such as artemis, has no other)",
    )
    up.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        metavar="DIR",
        help="where the running cluster is recorded (default .lab)",
    )

    down = sub.add_parser("down", help="stop the cluster `lab up` started")
    down.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        metavar="DIR",
        help="where `lab up` recorded the cluster (default .lab)",
    )

    images = sub.add_parser("images", help="build the lab's container images (Docker backend)")
    images.add_argument("action", choices=["build"], help="build (cached by content)")
    images.add_argument(
        "--target",
        action="append",
        help="also build this target's image (repeatable; default: broker_ref)",
    )

    rig = sub.add_parser(
        "rig",
        help="a rig of network namespaces with an sshd each on this machine, and its hosts "
        "file, to try --backend ssh (as root); `down` takes it all away",
    )
    rig.add_argument(
        "action", choices=["up", "down"], help="up: make it (or print its hosts file); down"
    )
    rig.add_argument("--hosts", type=int, help="how many hosts, 1 to 9 (default 3; up only)")
    rig.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        metavar="DIR",
        help="where the rig is recorded (default .lab)",
    )

    return {"up": _cmd_up, "down": _cmd_down, "images": _cmd_images, "rig": _cmd_rig}


def _cmd_rig(args: argparse.Namespace) -> int:
    """`lab rig up`: the hosts file on stdout (the rig made, or the one already up);
    `lab rig down`: everything the rig made removed. Both can be run again."""
    from lab.backends.ssh.rig_kept import check_hosts, kept_rig_down, kept_rig_up

    if args.action == "down":
        if args.hosts is not None:
            raise UsageError("--hosts is for `lab rig up`")
        tag = kept_rig_down(args.state_dir)
        said = f"rig {tag} taken down" if tag else f"no rig is up for {args.state_dir}"
        print(f"lab: rig: {said}", file=sys.stderr)
        return 0
    if args.hosts is not None:
        check_hosts(args.hosts)
    up = kept_rig_up(args.state_dir, args.hosts, lambda line: say(f"lab: rig: {line}"))
    how = "made" if up.made else "already up"
    say(f"lab: rig: {up.hosts} hosts {how}; `lab rig down` takes them away. Try:")
    say(f"lab: rig:   lab run master-failure --backend ssh --hosts {up.hosts_file}")
    print(up.hosts_file)
    return 0


def _cmd_up(args: argparse.Namespace) -> int:
    from lab.cli.updown import cluster_up
    from lab.ground.spec_words import parse_target_settings

    if args.nodes < 1:
        raise UsageError("--nodes must be at least 1")
    described = cluster_up(
        args.state_dir,
        nodes=args.nodes,
        backend=args.backend,
        target=args.target,
        toxiproxy_port=args.toxiproxy_port,
        mode=args.mode,
        hosts_file=args.hosts,
        target_settings=parse_target_settings(args.target_setting),
    )
    print(json.dumps(described))
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    from lab.cli.updown import cluster_down

    stopped = cluster_down(args.state_dir)
    print(
        f"lab: stopped {', '.join(stopped)}" if stopped else "lab: no cluster is up",
        file=sys.stderr,
    )
    return 0


def _cmd_images(args: argparse.Namespace) -> int:
    from lab.ground.extras import DOCKER, require

    require(DOCKER, "lab images")
    from lab.backends.docker.engine import ensure_engine
    from lab.backends.docker.images import build_images
    from lab.ground.spec import TARGETS

    targets = args.target or ["broker_ref"]
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise UsageError(f"unknown target {unknown[0]!r} (known: {', '.join(TARGETS)})")
    ensure_engine(say)
    for name, ref in sorted(build_images(say, targets).items()):
        print(f"{name}  {ref}")
    return 0
