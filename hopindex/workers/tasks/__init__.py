"""Thin Celery tasks: ids in, a method call, idempotent writes out. One module per stage."""
