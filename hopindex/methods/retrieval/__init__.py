"""Building blocks every query method shares: searches, fusion, provenance expansion."""
