"""Event log adapters (docs/architecture.md): an SQLite file embedded, a Redis stream distributed.

Import the adapter module itself (``sqlite_log``, ``redis_log``): the registry opens
only the one the state URL names, so an embedded run never imports redis here.
"""
