"""Live updates: the queues' events streams pushed to browsers over WebSockets
(``hub`` reads, ``consumer`` is the socket, ``outbox`` bounds what it holds; docs/live.md).
"""
