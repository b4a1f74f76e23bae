"""The Docker backend: the same lab in containers.

    engine          a Docker engine that answers (set up on demand as root on Debian)
    images          the lab's images, built locally, tagged by a content hash of their inputs
    base_image      the Debian base images, made by mmdebstrap and `docker import`
    cluster         DockerCluster: nodes and Toxiproxy as containers, ProcessCluster's interface
    abilities       what only containers can have done to them: full disks, networks, filters
    node_container  one node's container: start, kill, pause, stop; its log into events
    node_config     a node's plan and configuration as its container sees them
    node_filter     a packet filter inside a node's network namespace (links without a proxy)
    networks        the run's internal and edge networks, fixed addresses
    volumes         each node's size-limited tmpfs data volume; filling and freeing it
    labels          the labels on everything a run creates, and its owner
    reaper          removes what runs that died left behind, found by those labels

Nothing here is imported by the rest of the lab until the docker backend is asked for,
so a machine without the Docker SDK runs the process backend as before.
"""
