"""Live updates: the events streams of the queues, pushed to browsers over WebSockets.

``hub`` runs one stream reader per (prefix, queue) per server process and fans
its events out to a channel-layer group; ``discovery`` watches the set of
queues for the overview, one watcher per process; ``consumer`` is the
WebSocket end a page talks to (auth, subscribe, resume from a stream id);
``streams`` holds the stream-id arithmetic and the replay both use; ``layer``
is the channel layer (Redis pub/sub on the queues' Redis); ``routing`` is
the consumer's route (``ws/live/`` under the app's prefix). The browser side
is ``static/dashboard/live.js``.
"""
