"""Pure builders: one function per script, returning a ``ScriptCall``.

They format keys (through ``queues.keys``) and ARGV and touch no connection, so
they are tested without Redis and shared by the sync and asyncio runners.
"""
