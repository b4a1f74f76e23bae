"""broker_ref: the lab's reference broker, one durable AMQP 1.0 node on Qpid Proton.

Run it as `python -m broker_ref --config CONFIG.json` (see `config` and
`__main__`). Its parts, from the disk up:

    records        the durable changes (DECLARE, ENQUEUE, DEQUEUE) and their framing
    log_store      the append-only log: append, sync (fsync), recovery of a torn tail
    commit         group commit: the one point where staged changes become durable
    queues         the in-memory queues rebuilt from the log
    message_codec  marking a redelivered message's delivery-count
    roles          MASTER / REPLICA / WAITING / UNREACHABLE / DETACHED, and HA-1010
    oplog          the operational log on stdout, in Broker-J's format and codes
    amqp_server    the proton handler serving producers and consumers
    management     the HTTP API (/health, /api/latest/virtualhostnode/<name>)
    shutdown       SIGTERM/SIGINT as a request the reactor sees
    node           all of the above composed into one node
"""

__all__: list[str] = []
