"""Transfer master: the seed's five steps, moving mastership to a chosen node under load.

    1. give the chosen node time to become reasonably up to date
    2. suspend transactions; let it become fully up to date
    3. abort the suspended transactions (their clients are disconnected)
    4. the chosen node becomes master (an election it is asked to stand in); this one a replica
    5. clients reconnect to the new master through their failover lists

Setting `role` to MASTER on a node (its management API) asks its master to begin.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from broker_ref.feeds import Feeds
from broker_ref.group_core import GroupCore
from broker_ref.oplog import Code
from broker_ref.roles import Role

__all__ = ["TRANSFER_WAIT_S", "Transfer"]

TRANSFER_WAIT_S = 5.0


class Transfer:
    """Group thread only, but for `request`, which posts its work there."""

    def __init__(self, core: GroupCore, feeds: Feeds) -> None:
        self._core = core
        self._feeds = feeds
        self.to: str | None = None  # the node mastership is being moved to
        # Step 4 on this side: step down to REPLICA, saying why.
        self.step_down: Callable[[str], None] = lambda reason: None

    def request(self) -> str | None:
        """Make this node the master; None when asked, else why it cannot be asked."""
        core = self._core
        if core.role is Role.MASTER:
            return None
        master = core.master
        if master is None or master == core.name:
            return "there is no master to transfer from"
        core.call(lambda: core.net.send(master, {"type": "transfer_request", "term": core.term}))
        return None

    def on_request(self, peer: str, msg: dict[str, Any]) -> None:
        core = self._core
        if core.role is not Role.MASTER or self.to is not None:
            return
        self.to = peer
        address = dict(core.config.peers).get(peer, "?")
        core.oplog.info(
            Code.TRANSFER_MASTER, f"Master transfer requested : to '{peer}' ({address})"
        )
        asyncio.get_running_loop().create_task(self._transfer(peer))

    def on_ack(self, peer: str) -> None:
        if self.to == peer:
            self._feeds.wake()

    async def _transfer(self, peer: str) -> None:
        """The five steps, from the old master's side."""
        core = self._core
        term = core.term
        feed = self._feeds.feeds.get(peer)

        async def caught_up(through: Callable[[], int]) -> bool:
            deadline = time.monotonic() + TRANSFER_WAIT_S
            while time.monotonic() < deadline:
                if core.role is not Role.MASTER or core.term != term or feed is None:
                    return False
                if feed.acked >= through():
                    return True
                await asyncio.sleep(0.01)
            return False

        if not await caught_up(lambda: core.frames.last_txid - 100):
            self.to = None
            return
        loop = asyncio.get_running_loop()
        suspended: asyncio.Future[int] = loop.create_future()

        def on_suspended(last: int) -> None:
            loop.call_soon_threadsafe(suspended.set_result, last)

        core.store.suspend(on_suspended)
        last = await suspended
        self._feeds.wake()
        if not await caught_up(lambda: last):
            self.to = None
            core.store.become_master(core.term)  # resume serving
            return
        core.store.abort_suspended()
        core.net.send(peer, {"type": "transfer_go", "term": term})
        self.step_down(f"mastership transferred to {peer}")
        core.master_seen = 0.0
