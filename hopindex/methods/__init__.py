"""The seed methods as plain functions and classes over backend protocols."""
