"""The Elasticsearch requests of the keyword adapter, as plain JSON-able dicts.

Kept apart from the client so tests can hold every request against the
documented REST API (ES 9) and against what the tantivy twin indexes and asks.

Layout. Each hopindex index is an alias ``{prefix}{index}`` over one concrete
index ``{prefix}{index}.v{MAPPING_VERSION}`` (a name no hopindex index can
produce, since index names have no dot). Writes go through the alias with
``require_alias``, so a write to an index that was never ensured (or was dropped
meanwhile) fails instead of auto-creating an index with dynamic mappings; and a
later mapping version can be built beside the old one and the alias moved.

Analysis. The ``text`` field uses ``hopindex_en_stem``, the chain tantivy's
``en_stem`` applies, so both engines index the same terms at the same
positions and phrase search means the same thing: split on every character that
is neither alphabetic nor numeric (tantivy's simple tokenizer), drop tokens of
40 bytes or more (``length`` counts characters: equal for ASCII), lower-case,
then the Snowball English stemmer (``porter2``, tantivy's ``english``). Unlike
Elasticsearch's built-in ``english`` analyzer it keeps stop words, as tantivy
does; BM25 weighs them down anyway.
"""

from __future__ import annotations

from typing import Any

from hopindex.backends.protocols import KeywordRecord, UnitFilter

MAPPING_VERSION = 1
TEXT_ANALYZER = "hopindex_en_stem"
SIMILARITY = "hopindex_bm25"
# Java regex for the token separators: anything not alphabetic (the Unicode property
# Rust's char::is_alphabetic tests) and not a number (Nd, Nl, No, as is_numeric).
SEPARATOR_PATTERN = r"[^\p{IsAlphabetic}\p{N}]+"
# tantivy's remove_long(40) keeps tokens shorter than 40 bytes.
MAX_TOKEN_CHARS = 39
# Filter fields, in the order both engines apply them.
FILTER_FIELDS = ("kind", "source_doc_ids", "entities")


def alias_name(prefix: str, index: str) -> str:
    return f"{prefix}{index}"


def concrete_name(prefix: str, index: str) -> str:
    return f"{alias_name(prefix, index)}.v{MAPPING_VERSION}"


def index_settings(*, k1: float, b: float, shards: int, replicas: int) -> dict[str, Any]:
    """Body ``settings`` of the create-index request."""
    return {
        "index": {"number_of_shards": shards, "number_of_replicas": replicas},
        "similarity": {SIMILARITY: {"type": "BM25", "k1": k1, "b": b}},
        "analysis": {
            "tokenizer": {"hopindex_words": {"type": "pattern",
                                             "pattern": SEPARATOR_PATTERN}},
            "filter": {
                "hopindex_max_length": {"type": "length", "min": 0, "max": MAX_TOKEN_CHARS},
                "hopindex_porter2": {"type": "stemmer", "language": "porter2"},
            },
            "analyzer": {TEXT_ANALYZER: {
                "type": "custom", "tokenizer": "hopindex_words",
                "filter": ["hopindex_max_length", "lowercase", "hopindex_porter2"],
            }},
        },
    }


def index_mappings() -> dict[str, Any]:
    """Body ``mappings``: strict, so a stray field is an error, not a new mapping."""
    keyword = {"type": "keyword"}
    return {
        "dynamic": "strict",
        "properties": {
            "unit_id": keyword,
            "text": {"type": "text", "analyzer": TEXT_ANALYZER, "similarity": SIMILARITY,
                     "index_options": "positions"},
            **dict.fromkeys(FILTER_FIELDS, keyword),
        },
    }


def index_aliases(prefix: str, index: str) -> dict[str, Any]:
    return {alias_name(prefix, index): {"is_write_index": True}}


def document_source(record: KeywordRecord) -> dict[str, Any]:
    """What one unit stores: the same fields the tantivy twin indexes."""
    payload = record.payload
    return {
        "unit_id": record.unit_id,
        "text": record.text,
        **payload.as_fields(),
    }


def index_action(alias: str, record: KeywordRecord) -> dict[str, Any]:
    """One bulk ``index`` action (an upsert: the unit id is the document id)."""
    return {"_op_type": "index", "_index": alias, "_id": record.unit_id,
            "_source": document_source(record)}


def delete_action(alias: str, unit_id: str) -> dict[str, Any]:
    return {"_op_type": "delete", "_index": alias, "_id": unit_id}


def filter_clauses(unit_filter: UnitFilter | None) -> list[dict[str, Any]]:
    """Every non-empty field must match (``filter``: selects without scoring); within a
    field any listed value matches (``terms``)."""
    if unit_filter is None or unit_filter.is_empty:
        return []
    return [{"terms": {name: values}} for name, values in unit_filter.conditions()]


def _scored(match: dict[str, Any], unit_filter: UnitFilter | None) -> dict[str, Any]:
    clauses = filter_clauses(unit_filter)
    if not clauses:
        return match
    return {"bool": {"must": [match], "filter": clauses}}


def text_query(query: str, unit_filter: UnitFilter | None = None) -> dict[str, Any]:
    """Bag of words: the analysed terms OR-ed, each scored by BM25 (tantivy's SHOULD of
    term queries). ``match`` never parses query syntax, so user text is just words."""
    return _scored({"match": {"text": {"query": query, "operator": "or",
                                       "zero_terms_query": "none"}}}, unit_filter)


def phrase_query(phrase: str, unit_filter: UnitFilter | None = None) -> dict[str, Any]:
    """The analysed terms at consecutive positions (slop 0); one term is a term query."""
    return _scored({"match_phrase": {"text": {"query": phrase, "slop": 0,
                                              "zero_terms_query": "none"}}}, unit_filter)


def search_body(query: dict[str, Any], k: int) -> dict[str, Any]:
    """Top ``k`` ids and scores only: texts live in the state store."""
    return {"query": query, "size": k, "_source": False, "track_total_hits": False}


def matching_query(unit_filter: UnitFilter) -> dict[str, Any]:
    """The delete-by-query selection for a non-empty filter."""
    return {"bool": {"filter": filter_clauses(unit_filter)}}
