"""Backends: how nodes run. Local processes, Docker containers, and the Toxiproxy
server on every link; both backends share `base.ClusterBase`."""
