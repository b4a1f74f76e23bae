"""The client workers: producer and consumer processes that record every operation.

producer / consumer   the workers (`python -m clients.producer …`)
options               the command line both take: the failover list, queue, clock
op_writer             one operation per stdout line (docs/run-folder.md, history.jsonl)
event_loop            the runner's commands on stdin, timers, running a worker
failover_link         one AMQP link kept open through the failover list
workload              the bookkeeping free of I/O: failover policy, send book, pacer
"""
