"""Every change a page or the API makes, in one place: checked, run through
``queues.queue.Queue`` (one script per job, or bounded batches), refused in
plain words, audited, and for a retry or promote recorded as a cohort.
"""
