"""The node's consumers: each client receiver link, the queue it reads and what it holds.

A consumer gets unsettled deliveries within its credit (presettled ones leave the queue at
once); accepted or rejected → the message leaves the queue; released or modified → it
waits again (marked redelivered when the consumer says it failed); unsettled when the link
or connection goes → it waits again, marked redelivered. Queues with several consumers
hand out in turn. Reactor thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from proton import Delivery, Link

from broker_ref.message_codec import mark_redelivered
from broker_ref.queues import Queue, QueuedMessage

__all__ = ["Consumers"]

_OUTCOMES = (Delivery.ACCEPTED, Delivery.REJECTED, Delivery.RELEASED, Delivery.MODIFIED)


@dataclass(eq=False)
class _Consumer:
    """A client's receiver link: where it reads from and what it holds unsettled."""

    link: Link
    queue: Queue
    presettled: bool
    inflight: dict[Delivery, QueuedMessage] = field(default_factory=dict)
    next_tag: int = 0


class Consumers:
    def __init__(self, dequeue: Callable[[Queue, QueuedMessage], None]) -> None:
        self._dequeue = dequeue  # a message settled for good leaves its queue
        self._by_link: dict[Link, _Consumer] = {}
        self._by_queue: dict[str, list[_Consumer]] = {}

    def links(self) -> list[Link]:
        return list(self._by_link)

    def add(self, link: Link, queue: Queue, presettled: bool) -> None:
        consumer = _Consumer(link, queue, presettled)
        self._by_link[link] = consumer
        self._by_queue.setdefault(queue.name, []).append(consumer)
        self._pump(consumer)

    def drop(self, link: Link) -> None:
        """The link is gone: what it held unsettled waits again, marked redelivered."""
        consumer = self._by_link.pop(link, None)
        if consumer is None:
            return
        self._by_queue[consumer.queue.name].remove(consumer)
        inflight = sorted(consumer.inflight.items(), key=lambda item: item[1].seq)
        consumer.inflight.clear()
        for delivery, message in inflight:
            self._give_back(consumer.queue, message, redelivered=True)
            delivery.settle()
        if inflight:
            self.pump_queue(consumer.queue)

    def flow(self, link: Link) -> None:
        consumer = self._by_link.get(link)
        if consumer is not None:
            self._pump(consumer)

    def outcome(self, link: Link, delivery: Delivery) -> None:
        """The consumer settled (or said what became of) a delivery."""
        consumer = self._by_link.get(link)
        state = delivery.remote_state
        if not delivery.settled and state not in _OUTCOMES:
            return
        message = consumer.inflight.pop(delivery, None) if consumer is not None else None
        delivery.settle()
        if consumer is None or message is None:
            return
        queue = consumer.queue
        if state == Delivery.ACCEPTED or state == Delivery.REJECTED:
            self._dequeue(queue, message)
            return
        failed = state == Delivery.MODIFIED and bool(delivery.remote.failed)
        self._give_back(queue, message, redelivered=failed)
        self.pump_queue(queue)

    def _give_back(self, queue: Queue, message: QueuedMessage, redelivered: bool) -> None:
        if redelivered:
            message = QueuedMessage(message.seq, mark_redelivered(message.body))
        queue.give_back(message)

    def pump_queue(self, queue: Queue) -> None:
        consumers = self._by_queue.get(queue.name)
        if not consumers:
            return
        for consumer in consumers:
            self._pump(consumer)
        if len(consumers) > 1:
            consumers.append(consumers.pop(0))

    def _pump(self, consumer: _Consumer) -> None:
        """Send waiting messages while the consumer has credit; complete a drain when empty."""
        link = consumer.link
        queue = consumer.queue
        credit = link.credit
        while credit > 0:
            message = queue.take()
            if message is None:
                break
            consumer.next_tag += 1
            delivery = link.delivery(str(consumer.next_tag))
            link.stream(message.body)
            link.advance()
            credit -= 1
            if consumer.presettled:
                delivery.settle()
                self._dequeue(queue, message)
            else:
                consumer.inflight[delivery] = message
        if credit > 0 and link.drain_mode:
            link.drained()
