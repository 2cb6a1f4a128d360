"""An index as the local client answers for it: its name, method, creation time and
options (``index_view``); described, what it holds (documents, units per kind) and its
status with what it is missing (``Outstanding.as_dict``); its default LLM budget and
LLM mode; and one of its documents (``document_view``). The HTTP API serves these as
they are, so every door shows the same fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hopindex.core.budget import BudgetLimits, index_default
from hopindex.core.citations import RESERVED_METADATA_KEY, document_citation
from hopindex.core.errors import NotFoundError
from hopindex.core.ids import validate_index_name
from hopindex.core.llm_modes import index_mode, parse_llm_mode

if TYPE_CHECKING:
    from hopindex.api.service import Hopindex
    from hopindex.backends.protocols import IndexInfo
    from hopindex.core.models import Document
    from hopindex.core.settings import LlmMode


def index_view(info: IndexInfo) -> dict[str, Any]:
    return {"name": info.name, "method": info.method, "created_at": info.created_at,
            "options": info.options}


def describe_index(service: Hopindex, name: str, *, verify: bool = False) -> dict[str, Any]:
    """The index with its method, settings, documents, units per kind and status;
    ``verify``: also read every document's text for text its units were not built from
    (what ``repair --check`` asks)."""
    info = service.index_info(name)
    if info is None:
        raise NotFoundError(f"no index {name!r}")
    units = service.backends.state.count_units(name)
    return {**index_view(info), "documents": service.count_documents(name),
            "units": {kind.value: n for kind, n in sorted(units.items())},
            **service.outstanding(name, verify=verify).as_dict()}


def document_view(document: Document) -> dict[str, Any]:
    """The document with the metadata it was given and its citation: the layout a file
    reader recorded under the reserved key is hopindex's own (offsets, where the file
    was read), shown only as the citation it gives."""
    citation = document_citation(document.metadata, len(document.text))
    return {"doc_id": document.doc_id, "index": document.index, "title": document.title,
            "text": document.text, "content_hash": document.content_hash,
            "metadata": {key: value for key, value in document.metadata.items()
                         if key != RESERVED_METADATA_KEY},
            "citation": None if citation is None else citation.as_dict()}


def ingest_budget(service: Hopindex, index: str, given: BudgetLimits) -> BudgetLimits | None:
    """The budget an ingest of ``index`` runs with when ``given`` holds the limits asked
    for: None (the index's default, applied when the job is created) when none is
    given; otherwise the index's default with the given limits replacing its own, so a
    flag for one kind never drops the default's limit of the other."""
    if not given.is_limited:
        return None
    info = service.index_info(index)
    default = index_default(info.options) if info is not None else BudgetLimits()
    return default.with_overrides(max_llm_tokens=given.max_llm_tokens,
                                  max_cost=given.max_cost)


def budget_view(info: IndexInfo) -> dict[str, Any]:
    """An index's default budget: ``{"index", "budget"}``, the budget holding the limits
    set (an empty object: none)."""
    return {"index": info.name, "budget": index_default(info.options).as_dict()}


def index_budget(service: Hopindex, index: str) -> dict[str, Any]:
    """``budget_view`` of ``index``; ``NotFoundError`` when there is no such index."""
    info = service.index_info(index)
    if info is None:
        raise NotFoundError(f"no index {index!r}")
    return budget_view(info)


def set_index_budget(service: Hopindex, index: str, budget: BudgetLimits) -> dict[str, Any]:
    """Store ``budget`` as the default of ``index``'s later jobs (no limits: none);
    the default as it is then. A cost limit with no prices set is refused here, as an
    ingest giving it would be, rather than refusing every later ingest."""
    from hopindex.scheduler.submit import check_budget

    validate_index_name(index)
    check_budget(service.runtime, budget)
    return budget_view(service.set_index_budget(index, budget))


def llm_mode_view(info: IndexInfo, default: LlmMode) -> dict[str, Any]:
    """An index's default LLM mode: ``{"index", "llm_mode", "effective"}``, the index's
    own (None: none) and the one its jobs run in when they name none (``default``, the
    setting's, without one of its own)."""
    own = index_mode(info.options)
    return {"index": info.name, "llm_mode": None if own is None else own.value,
            "effective": (own or default).value}


def index_llm_mode(service: Hopindex, index: str) -> dict[str, Any]:
    """``llm_mode_view`` of ``index``; ``NotFoundError`` when there is no such index."""
    info = service.index_info(index)
    if info is None:
        raise NotFoundError(f"no index {index!r}")
    return llm_mode_view(info, service.settings.llm_mode)


def set_index_llm_mode(service: Hopindex, index: str, mode: LlmMode | str | None
                       ) -> dict[str, Any]:
    """Store ``mode`` as the mode of ``index``'s later jobs that name none (None: the
    index's default is removed); the default as it is then. A name that is no mode is
    an ``InvalidInputError`` naming ``llm_mode``."""
    chosen = parse_llm_mode(mode)
    validate_index_name(index)
    return llm_mode_view(service.set_index_llm_mode(index, chosen), service.settings.llm_mode)
