"""Live updates: the queues' events streams pushed to browsers over WebSockets
(``hub`` reads, ``fanout`` hands out, ``consumer`` is the socket; docs/live.md).
"""
