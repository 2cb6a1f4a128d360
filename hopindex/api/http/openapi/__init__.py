"""The OpenAPI 3.1 contract of the HTTP API, written as data."""
