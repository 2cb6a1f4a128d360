"""LLM client pieces: rate limiting, shared by every process calling the same model."""
