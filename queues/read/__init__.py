"""The read model: the only code that reads Redis for display.

Views, the JSON API, the live consumer, the command line and ``Queue``'s
getters ask these modules for what they show; nothing else formats a key or
decodes a job for display. One module per kind of thing read (counts, lists,
one job, events, flows, schedulers, workers, ...).
"""
