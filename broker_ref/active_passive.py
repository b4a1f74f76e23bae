"""The C++ broker's active-passive cluster (the C++ broker's active-passive chapter): brokers never
elect themselves; a cluster manager promotes exactly one.

    joining    every broker starts here and stays until it finds a primary (or is promoted)
    catchup    a backup connected to the primary: it clears its store and downloads a full
               copy through `ha-brokers-url` (the peers' addresses, the lab's proxies)
    ready      caught up: it follows every change and can take over
    recovering a promoted backup: it holds the acknowledgements of new messages until the
               backups that were ready under the old primary are ready again, or
               `ha-backup-timeout` passes for those that never reconnect
    active     the primary, serving clients

The primary settles a message only when every ready backup has acknowledged it (or a
consumer took it first: commit_path.py counts those), and a backup still catching up has
acknowledged it if it came after that backup's catch-up target. A backup not heard from for twice
`link-heartbeat-interval` is dead to the primary, which then stops waiting for it and drops
its link, as the C++ primary closes a failed backup's link: a backup that still hears its
primary and sees it no longer streams to it is no longer ready (it has missed what the primary
acknowledged since) and catches up again before it is. A backup looks for its primary every
`link-maintenance-interval`; one that loses its primary keeps its status and waits for a new
one. Promotion is a management request: allowed from ready, from
joining only while no peer is established (the first primary of a new cluster), refused from
catch-up, ignored by a primary.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from broker_ref.contact import Contact
from broker_ref.feeds import Feeds
from broker_ref.follower import SYNC_RETRY_S, Follower
from broker_ref.group_core import GroupCore
from broker_ref.ha_status import HaStatus, IllegalTransition, StatusTracker
from broker_ref.oplog import Code
from broker_ref.roles import Role

__all__ = ["ActivePassive", "PromotionRefused"]


class PromotionRefused(Exception):
    """The broker will not be promoted now; the message says why."""


class ActivePassive:
    """Group thread only, but for `status` (read by the management thread)."""

    def __init__(
        self,
        core: GroupCore,
        contact: Contact,
        feeds: Feeds,
        follower: Follower,
        on_fatal: Callable[[str], None],
    ) -> None:
        config = core.config
        self._core = core
        self._contact = contact
        self._feeds = feeds
        self._follower = follower
        self._on_fatal = on_fatal
        self._status = StatusTracker(core.oplog)
        self._backup_timeout_s = config.ha_backup_timeout_s
        self._maintenance_s = config.link_maintenance_interval_s
        self._next_check = 0.0
        # As a backup: how far its catch-up goes (the primary's last txid when it synced), and
        # the backups its primary reported ready (the ones to wait for if promoted).
        self._catchup_to = 0
        self._primary_ready: tuple[str, ...] = ()
        # As the primary: each backup's catch-up target, the ready ones, the expected ones.
        self._targets: dict[str, int] = {}
        self.ready_backups: set[str] = set()
        self._expected: set[str] = set()
        self._recovering_since = 0.0
        self._runs: dict[str, str] = {}  # each peer's run (a new one: it restarted)
        # As a backup: the stream (the follower's `synced_at`) the primary was last seen to
        # list among those it streams to; a status without it after that: it gave up on us.
        self._listed_in: float | None = None
        follower.streaming_role = Role.WAITING  # a backup is a REPLICA only once ready
        follower.on_stream_start = self._stream_started
        follower.on_applied = self._applied

    @property
    def status(self) -> HaStatus:
        return self._status.current

    def _change(self, status: HaStatus) -> None:
        try:
            self._status.change(status)
        except IllegalTransition as exc:
            self._on_fatal(str(exc))

    # ---- what the group asks of its mode -----------------------------------------------------

    def started(self, now: float) -> None:
        self._next_check = now  # look for a primary at once

    def full_copy(self, peer: str) -> bool:
        """A backup clears its store and takes a full copy from the primary."""
        return True

    def tick(self, now: float) -> None:
        core = self._core
        core.broadcast(
            core.status(
                ha=self.status.value,
                ready=sorted(self.ready_backups),
                streams=self._feeds.streaming(),
            )
        )
        if self.status.primary:
            self._recover(now)
            self.advance_commit()
            return
        master = core.master
        if master is not None and not self._contact.alive(master, now):
            core.oplog.info(Code.HA_DISCONNECTED, f"Disconnected from primary : '{master}'")
            self._follower.forget()
            core.master = None
        if now < self._next_check:
            return
        self._next_check = now + self._maintenance_s
        if core.master is None:
            self._find_primary(now)
        elif self._follower.synced is None and now - self._follower.sync_asked > SYNC_RETRY_S:
            self._follower.ask_sync(core.master)

    def _find_primary(self, now: float) -> None:
        """Link maintenance: connect to the peer that says it is the primary."""
        core = self._core
        for peer in core.peers:
            info = self._contact.info.get(peer, {})
            if info.get("role") != "MASTER" or not self._contact.alive(peer, now):
                continue
            term = int(info.get("term", 0))
            if term != core.term:
                core.set_term(term, None)
            core.master = peer
            core.master_seen = now
            self._primary_ready = tuple(str(p) for p in info.get("ready") or ())
            self._follower.forget()
            self._follower.ask_sync(peer)
            return

    def on_stall(self, gap_s: float, now: float) -> None:
        """A backup forgets its primary and finds it again; a primary stays one."""
        if self.status.primary:
            self._core.master = self._core.name
        self._next_check = now

    def on_peer_left(self, peer: str) -> None:
        """Twice the link heartbeat without a word: the backup is dead to the primary."""
        if self.status.primary:
            self._forget_backup(peer, "missed its heartbeats")

    def _forget_backup(self, peer: str, why: str) -> None:
        """The primary stops waiting for `peer` (dead, or restarted: a new broker that must
        catch up again) and drops what it still had queued for it."""
        self._targets.pop(peer, None)
        self._feeds.give_up(peer)
        if peer in self.ready_backups:
            self.ready_backups.discard(peer)
            self._core.oplog.warn(
                Code.HA_BACKUP_DEAD, f"Backup '{peer}' {why} : no longer waited for"
            )
        self.advance_commit()

    def on_message(self, peer: str, kind: object, msg: dict[str, Any], now: float) -> None:
        return None  # no elections, no transfers

    def on_status(self, peer: str, msg: dict[str, Any], term: int, now: float) -> None:
        core = self._core
        run = str(msg.get("run", ""))
        restarted = self._runs.get(peer, run) != run
        self._runs[peer] = run
        if self.status.primary:
            if restarted and (peer in self._targets or peer in self.ready_backups):
                self._forget_backup(peer, "restarted")
            return
        if peer != core.master:
            return
        if msg.get("role") != "MASTER":  # the primary restarted or was stopped
            core.oplog.info(Code.HA_DISCONNECTED, f"Disconnected from primary : '{peer}'")
            self._follower.forget()
            core.master = None
            return
        core.master_seen = now
        self._primary_ready = tuple(str(p) for p in msg.get("ready") or ())
        self._check_streamed(peer, msg, term, now)

    def _check_streamed(self, primary: str, msg: dict[str, Any], term: int, now: float) -> None:
        """A backup whose primary stopped streaming to it (it missed its heartbeats: REF-2010
        there) holds none of what the primary acknowledged since: it is not ready, and joins
        the primary's stream again (catch-up, then ready)."""
        follower = self._follower
        if not follower.following(primary, term):
            return
        if self._core.name in (msg.get("streams") or ()):
            self._listed_in = follower.synced_at
            return
        if self._listed_in != follower.synced_at:
            return  # this stream is not under way at the primary yet
        core = self._core
        self._listed_in = None
        core.oplog.warn(
            Code.HA_DISCONNECTED,
            f"Disconnected from primary : '{primary}' : it no longer streams to this backup",
        )
        follower.forget()
        core.master = None
        if self.status is HaStatus.READY:
            self._change(HaStatus.CATCHUP)
            core.set_role(Role.WAITING, "a backup catching up")
        self._next_check = now  # find the primary again at once

    # ---- catching up -------------------------------------------------------------------------

    def _stream_started(self, master: str) -> None:
        """The backup's store is cleared and its stream runs: it catches up."""
        self._core.oplog.info(Code.HA_CONNECTED, f"Connected to primary : '{master}'")
        self._change(HaStatus.CATCHUP)
        self._catchup_to = self._follower.master_last
        if self._core.frames.last_txid >= self._catchup_to:
            self._caught_up()

    def _applied(self, txid: int) -> None:
        streaming = self._follower.synced is not None  # not what an abandoned stream applied
        if streaming and self.status is HaStatus.CATCHUP and txid >= self._catchup_to:
            self._caught_up()

    def _caught_up(self) -> None:
        self._change(HaStatus.READY)
        self._core.oplog.info(Code.HA_BACKUP_READY, "Backup is ready")
        self._core.set_role(Role.REPLICA, "a ready backup")

    # ---- the primary's side ------------------------------------------------------------------

    def on_sync(self, peer: str) -> None:
        """A backup asked to (re)join this primary's stream: its catch-up target is all this
        primary holds now; until it gets there it is not ready."""
        self._targets[peer] = self._core.frames.last_txid
        self.ready_backups.discard(peer)

    def required(self) -> set[str]:
        """The backups an acknowledgement waits for now: the ready ones, and while recovering
        the expected ones, connected or not."""
        return self.ready_backups | self._expected

    def acks_needed(self) -> int:
        return len(self.required()) if self.status.primary else 0

    def advance_commit(self) -> None:
        if not self.status.primary:
            return
        acks = self._feeds.streaming_acks()
        for peer, target in list(self._targets.items()):
            if peer not in self.ready_backups and acks.get(peer, -1) >= target:
                self._backup_ready(peer)
        last = self._guarded(acks)
        required = self.required()
        through = min((acks.get(peer, 0) for peer in required), default=last)
        self._feeds.post(min(through, last))

    def _guarded(self, acks: dict[str, int]) -> int:
        """The last transaction this primary may settle: what it holds, but not past what a
        backup still catching up has acknowledged beyond its catch-up target. Whatever came
        after a backup asked to join reaches it only through its stream; settled without it,
        such a message would be missing from that backup once it is ready and promoted (the
        primary waits for every backup, the C++ broker's queue guards)."""
        last = self._core.frames.last_txid
        for peer, target in self._targets.items():
            if peer not in self.ready_backups:
                last = min(last, max(acks.get(peer, -1), target))
        return last

    def _backup_ready(self, peer: str) -> None:
        self.ready_backups.add(peer)
        what = "Recovering backup" if peer in self._expected else "New backup"
        self._core.oplog.info(Code.HA_BACKUP_READY, f"{what} is ready : '{peer}'")
        self._recover(time.monotonic())

    def _recover(self, now: float) -> None:
        """Recovering → active once every expected backup is ready, or timed out."""
        if self.status is not HaStatus.RECOVERING:
            return
        if now - self._recovering_since >= self._backup_timeout_s:
            connected = set(self._feeds.streaming())
            for peer in sorted(self._expected - connected):
                self._core.oplog.warn(
                    Code.HA_BACKUP_TIMED_OUT, f"Recovering backup timed out : '{peer}'"
                )
                self._expected.discard(peer)
        if self._expected <= self.ready_backups:
            self._expected = set()
            self._change(HaStatus.ACTIVE)
            self._core.oplog.info(Code.HA_RECOVERED, "All backups recovered")

    # ---- operator and cluster manager actions ---------------------------------------------------

    def promote(self) -> None:
        """Make this broker the primary (a cluster manager's request); PromotionRefused says
        why not."""
        core = self._core
        status = self.status
        if status.primary:
            core.oplog.info(Code.HA_PROMOTED, "Ignoring promotion, already primary")
            return
        if status is HaStatus.CATCHUP:
            raise self._refuse("Still catching up, cannot be promoted.")
        now = time.monotonic()
        if status is HaStatus.JOINING:
            established = [
                p
                for p in core.peers
                if self._contact.alive(p, now)
                and self._contact.info.get(p, {}).get("ha", "joining") != "joining"
            ]
            if established:
                raise self._refuse("Joining active cluster, cannot be promoted.")
        expected = {p for p in self._primary_ready if p != core.name and p in core.peers}
        peer_terms = [int(self._contact.info.get(p, {}).get("term", 0)) for p in core.peers]
        core.set_term(max([core.term, *peer_terms]) + 1, core.name)
        self._follower.forget()
        core.master = core.name
        self._feeds.open_all()
        self._targets = {}
        self.ready_backups = set()
        self._expected = expected
        self._recovering_since = now
        core.role = Role.MASTER
        self._change(HaStatus.RECOVERING)
        core.store.become_master(core.term)
        core.oplog.info(Code.HA_PROMOTED, "Promoted to primary")
        shown = ", ".join(f"'{p}'" for p in sorted(expected)) or "none"
        core.oplog.info(Code.HA_RECOVERING, f"Recovering backups : {shown}")
        self._recover(now)
        core.broadcast(core.status(ha=self.status.value, ready=[], streams=[]))

    def _refuse(self, why: str) -> PromotionRefused:
        self._core.oplog.error(Code.HA_PROMOTION_REFUSED, why)
        return PromotionRefused(why)

    def view(self) -> dict[str, Any]:
        """The broker's HA status for the management API (qpid-ha status)."""
        core = self._core
        return {
            "status": self.status.value,
            "primary": core.master,
            "readyBackups": sorted(self.ready_backups),
            "expectedBackups": sorted(self._expected),
            "members": {
                peer: self._contact.info.get(peer, {}).get("ha", "unknown") for peer in core.peers
            },
        }
