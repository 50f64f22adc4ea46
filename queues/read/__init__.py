"""The read model: the only code that reads Redis for display.

Views, the JSON API, the live consumer, the command line and ``Queue``'s
getters ask these modules for what they show; nothing else formats a key or
decodes a job for display. One module per kind of thing read (counts, lists,
one job, events, flows, schedulers, workers, ...):

- ``states``: the job states, defined once; everything that lists them derives from it
- ``refs``: ``QueueRef``, a queue as every layer names it
- ``decode``: the one job decoder (a fast path for common hashes inside)
- ``counts``: jobs per state, paused flag, recent finishes: one round trip for many queues
- ``lists``: a page of a state, newest first (wait and paused paged as one list)
- ``job``: one job's page, and which state holds a job
- ``events``: a queue's events stream, paged and filtered
- ``stream``: the events stream as the live updates read it (asyncio)
- ``progress``, ``failures``: a job's progress and failed attempts as displayed
- ``replies``: tolerant replies (a key of the wrong type reads as empty)

Importing this package imports none of them (``queues.keys`` imports
``states``, which must not pull the rest in).
"""
