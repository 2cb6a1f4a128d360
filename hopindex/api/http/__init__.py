"""The HTTP API (aiohttp): ``hopindex serve``. See ``app.create_app`` and README "HTTP API"."""
