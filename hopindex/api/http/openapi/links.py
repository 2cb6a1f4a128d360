"""The OpenAPI components of a ``kgbridge`` index's SAME_AS links: a link and a rejected
link (``/v1/indexes/{name}/links``), the values of operations, which no model
describes. The body that rejects one is a model (requests.RejectLink)."""

from __future__ import annotations

from hopindex.api.http.openapi.schemas import NUMBER, Schema, obj, ref

LINK_END = obj({
    "doc_id": {"type": "string"},
    "unit_id": {"type": "string", "description": "the entity's entity_summary unit"},
    "name": {"type": "string", "description": "the entity's name as this document writes it"},
    "title": {"type": "string", "description": "the document's title (\"\" without one)"},
}, ("doc_id", "unit_id", "name", "title"))

# What a link holds besides its id and state (kgbridge keeps them in kgbridge.links).
_LINK_FIELDS: dict[str, Schema] = {
    "entity": {"type": "string", "description": "the normalised entity name both ends share"},
    "a": ref("LinkEnd"), "b": ref("LinkEnd"),
    "s_emb": {**NUMBER, "description": "cosine of the two entity summaries' vectors"},
    "s_llm": {**NUMBER, "description": "the model's 0-10 verdict / 10"},
    "s_link": {**NUMBER, "description": "alpha * s_llm + (1 - alpha) * s_emb, at least tau"},
    "reason": {"type": "string", "description": "the model's reason for its verdict"},
}

LINK = obj({"link_id": {"type": "string"}, **_LINK_FIELDS,
            "state": {"const": "linked"}},
           ("link_id", *_LINK_FIELDS, "state"))

REJECTED_LINK = obj({
    "link_id": {"type": "string"}, **_LINK_FIELDS,
    "state": {"const": "rejected"},
    "rejected_at": {"type": "string", "format": "date-time"},
    "by": {"type": "string", "description": "who rejected it"},
}, ("link_id", "state", "rejected_at", "by"))
REJECTED_LINK["description"] = (
    "the link as it was, rejected; a link rejected before comes back as its first "
    "rejection only (link_id, state, rejected_at, by): the link itself is gone")

LINK_SCHEMAS: dict[str, Schema] = {"LinkEnd": LINK_END, "Link": LINK,
                                   "RejectedLink": REJECTED_LINK}
