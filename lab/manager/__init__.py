"""The cluster manager of an active-passive cluster (a lab role beside the backends): a small
analogue of rgmanager that starts and restarts brokers, promotes exactly one, and moves the
virtual address to it."""
