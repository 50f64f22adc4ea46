"""EchoMQ runtime: the Python side of the EchoMQ / BullMQ queue protocol.

No Django imports here; the dashboard builds on this package, never the reverse.
"""
