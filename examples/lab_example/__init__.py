"""An example of a broker tested with ha-chaos-lab as a library (docs/library.md):

    lab_example.target      ExampleBroker: the broker as the user starts it, a lab target
    lab_example.node        the user's start command for one node
    lab_example.prediction  FailedOverWithin: an expectation of the user's own
    lab_example.scenarios   EXAMPLE_FAILOVER: a scenario with a prediction built from both

pyproject.toml registers the scenario and the target through the `lab.scenarios` and
`lab.targets` entry point groups, so `lab list`, `lab run`, `lab campaign` and the pytest
plugin know them by name.
"""
