"""Benchmarks: `lab bench NAME` runs one and prints its figure on the last line.

Each benchmark is a module in this package with a module-level `BENCHMARK`
(a `Benchmark`): a name, a one-line description and `run(say) -> str`, where
`say` prints progress lines and the returned string is the figure line.
"""
