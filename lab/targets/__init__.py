"""Targets: what runs as a node. The protocol, broker_ref, Apache Qpid Broker-J, and the
management API client both answer."""
