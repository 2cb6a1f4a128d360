"""Settings, models, errors, ids, text utilities and logging shared by every layer."""
