"""Live updates: the events streams of the queues, pushed to browsers over WebSockets.

``hub`` runs a few shared stream readers per server process; ``fanout`` hands
what they read to the sockets of that process (each socket's bounded inbox,
a frame encoded once per kind of subscription); ``discovery`` watches the set
of queues for the overview, one watcher per process; ``consumer`` is the
WebSocket end a page talks to (auth, subscribe, resume from a stream id);
``streams`` holds the stream-id arithmetic and the replay both use;
``routing`` is the consumer's route (``ws/live/`` under the app's prefix).
The browser side is ``static/dashboard/live.js``.
"""
