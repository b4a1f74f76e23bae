"""Apache ActiveMQ Artemis as a target: its distribution, its settings, its configuration,
its management API read through Jolokia, and the target."""
