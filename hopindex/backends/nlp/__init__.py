"""NLP adapters: sentence bounds and named entities."""

from hopindex.backends.nlp.spacy_analyzer import SpacyAnalyzer

__all__ = ["SpacyAnalyzer"]
