"""Contract suites: one per backend protocol, inherited unchanged by every adapter's tests.

An adapter's test module subclasses the contract and provides a ``store``
fixture (and, when ``persistent = True``, a ``reopen_store`` fixture that opens
a second instance over the same data).
"""
