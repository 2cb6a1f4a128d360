"""Backend protocols and their adapters, each chosen by a URL (DESIGN.md §4)."""
