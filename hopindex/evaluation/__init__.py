"""Evaluation: dataset loaders, answer and retrieval metrics, and reports."""
