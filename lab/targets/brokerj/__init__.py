"""Apache Qpid Broker-J as a target: its distribution, its configuration, the target."""
