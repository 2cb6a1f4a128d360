"""Celery app, queue routing and thin task wrappers around methods."""
