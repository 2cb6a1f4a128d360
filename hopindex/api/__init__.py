"""The front doors: the in-process service facade and the ``hopindex`` CLI."""
