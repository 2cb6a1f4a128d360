"""Tests of the test doubles shipped in ``hopindex.testing``, driven by the real clients."""
