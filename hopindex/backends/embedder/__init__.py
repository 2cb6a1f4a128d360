"""Embedder adapters: texts to unit-length float32 vectors."""

from hopindex.backends.embedder.onnx_embedder import OnnxEmbedder
from hopindex.backends.embedder.openai_embedder import OpenAiEmbedder
from hopindex.backends.embedder.sentence_transformer import SentenceTransformerEmbedder

__all__ = ["OnnxEmbedder", "OpenAiEmbedder", "SentenceTransformerEmbedder"]
