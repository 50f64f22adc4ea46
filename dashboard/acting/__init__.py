"""Every change a page or the API makes, in one place: checked, run (each job's
own script, pipelined, or ``queues.queue.Queue``'s bounded batches), refused in
plain words, audited, and for a retry or promote recorded as a cohort.
"""
