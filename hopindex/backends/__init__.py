"""Backend protocols and their adapters, each chosen by a URL (docs/architecture.md)."""
