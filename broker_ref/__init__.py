"""broker_ref: the lab's reference broker, one durable AMQP 1.0 node on Qpid Proton, in an
HA group. Run it as `python -m broker_ref --config CONFIG.json` (see `config` and
`__main__`). Its parts, from the disk up:

    records        the durable changes (DECLARE, ENQUEUE, DEQUEUE) and their framing
    frame_index    where each record starts, one offset kept per 128 records
    log_recovery   reading the log back a chunk at a time: a torn tail cut, damage refused
    log_store      the append-only log: append, sync (fsync), truncation
    commit         group commit: the one point where staged changes become durable
    frame_log      every record a node holds, for the replication stream
    queues         the in-memory queues rebuilt from the log
    message_codec  marking a redelivered message's delivery-count
    roles          MASTER / REPLICA / WAITING / UNREACHABLE / DETACHED, and HA-1010
    oplog          the operational log on stdout, in Broker-J's format and codes

  serving clients (the reactor thread)
    amqp_server    the proton handler: connections, links, transfers
    consumers      each consumer's link, its deliveries and their outcomes
    commit_path    a producer's transfer from staging to settlement (or refusal)
    replica_state  a node's copy of its master's records: apply, roll back, rebuild

  the group (its own thread)
    group          the group thread, and the dispatch of peer messages
    group_core     the state every part shares; what the group asks of the reactor
    contact        who this node hears from; stalls
    feeds          the master's side of the replication stream
    follower       the replica's side of it
    self_elected   the replicated group's rules: heartbeats and lease, the commit point
    election       elections: the rules and the protocol (pre-vote, vote)
    transfer       transfer master, the seed's five steps
    peer_network   connections between nodes; intruders refused
    peer_wire      the wire format between nodes

  around it
    management     the HTTP API (/health, /api/latest/virtualhostnode/<name>)
    mailbox        hands the group's decisions to the reactor thread
    shutdown       SIGTERM/SIGINT as a request the reactor sees
    node           all of the above composed into one node
"""

__all__: list[str] = []
