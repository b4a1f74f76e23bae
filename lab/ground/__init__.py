"""The ground every part of the lab stands on; it imports nothing above it.

errors      the one error root (LabError) and its kinds
spec        the run spec and its values: topology, durability, group, workload
faultops    fault operations as data (a schedule is a tuple of them)
events      where observations go (the run's event log, or nowhere)
topology    links and their names (client_to_n1, n1_to_n2)
nodes       what a cluster's nodes are: their plans, statuses, a target's traits
ports       the loopback address and port reservations
locks       machine-wide locks
children    child processes that die with the lab
files       files written whole or not at all
"""
