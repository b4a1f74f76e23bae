"""The process backend: Toxiproxy and every node as local processes on 127.0.0.1."""
