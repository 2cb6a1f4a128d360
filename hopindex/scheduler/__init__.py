"""Job planning: validation, the ingest canvas, incremental planning, control tasks."""
