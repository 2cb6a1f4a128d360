"""Each MCP tool's arguments, as pydantic models: one declaration is both the JSON
Schema a model reads (``tools/list``) and the check a call's arguments pass, refused
in the words the HTTP API uses for the same field (api/client/refusals.py).

The descriptions are written for a model choosing a tool and filling its arguments:
what the argument is, what leaving it out does, and where its values come from.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from hopindex.api.client.refusals import refusal_of
from hopindex.api.client.requests import (
    MAX_METHOD_CHARS,
    DocumentId,
    IndexName,
    JsonInt,
    LlmModeName,
    NotBlank,
    refused,
)
from hopindex.core.errors import InvalidInputError
from hopindex.readers.options import SplitBy

# What search returns when k is left out: a model reads every passage, so fewer than the
# HTTP API's page of 10.
DEFAULT_K = 5
# The most passages one search returns: each is read by the model, whole.
MAX_TOOL_K = 50
# How long wait_for_job may wait in one call: an MCP client's request timeout is
# usually a minute or a few; a longer job is waited for by calling again.
DEFAULT_WAIT_S = 60
MAX_WAIT_S = 600
# Records one ingest_text call may carry (the rest go in later calls): a tool call's
# arguments are one JSON message a model writes out.
MAX_INLINE_RECORDS = 1000
# Document ids one delete_documents call may name.
MAX_DELETE_IDS = 1000

MAX_CHARS_CONTEXT = "max_question_chars"
_INDEX = Field(description="the index's name (list_indexes lists them)")
_METHOD = ("the query method; leave it out for the index's default (describe_index "
           "lists the methods that fit the index)")


def _method(description: str) -> Any:
    return Annotated[str | None, Field(max_length=MAX_METHOD_CHARS, description=description)]


class ToolArguments(BaseModel):
    # A misspelt argument is refused, not ignored: a model learns the right name.
    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def read(cls, arguments: dict[str, Any], max_question_chars: int) -> ToolArguments:
        """The arguments, or ``InvalidInputError`` naming the first one that is wrong."""
        try:
            return cls.model_validate(arguments,
                                      context={MAX_CHARS_CONTEXT: max_question_chars})
        except ValidationError as exc:
            found = refusal_of(cls, exc.errors(include_url=False))
            # A refusal worded by a check that names the field itself is not named twice.
            message = found.message.removeprefix(f"{found.field}: ")
            raise InvalidInputError(message, where=found.field) from None


class NoArguments(ToolArguments):
    """Takes no arguments."""


class SearchArguments(ToolArguments):
    question: Annotated[NotBlank(), Field(  # type: ignore[valid-type]
        description="the question, in natural language; multi-hop questions are welcome "
                    "(the index links documents at build time)")]
    index: Annotated[IndexName, _INDEX]
    method: _method(_METHOD) = None  # type: ignore[valid-type]
    k: Annotated[JsonInt(1, MAX_TOOL_K),  # type: ignore[valid-type]
                 Field(description=f"how many passages to return (default {DEFAULT_K})")
                 ] = DEFAULT_K

    @field_validator("question")
    @classmethod
    def _length(cls, value: str, info: ValidationInfo) -> str:
        # The server's limit (HOPINDEX_API_MAX_QUERY_CHARS), as its HTTP API applies it.
        limit = (info.context or {}).get(MAX_CHARS_CONTEXT)
        if limit is not None and len(value) > limit:
            raise refused(f"is {len(value):,} characters, over the limit of {limit:,} "
                          "(HOPINDEX_API_MAX_QUERY_CHARS)", code="too_long")
        return value


class AnswerArguments(SearchArguments):
    method: _method(  # type: ignore[valid-type]
        "an LLM query method that writes an answer (e.g. indexrag, ircot, bridgerag); "
        "leave it out for the index's default, which must be one") = None


class IndexArguments(ToolArguments):
    index: Annotated[IndexName, _INDEX]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str | None, Field(
        max_length=1000, description="a stable id; the same id sent again replaces the "
                                     "document (default: one made from the text)")] = None
    title: Annotated[str, Field(max_length=1000, description="the title, if any")] = ""
    text: Annotated[str, Field(description="the document's text")]
    metadata: Annotated[dict[str, Any], Field(
        description="any JSON object kept with the document")] = Field(default_factory=dict)

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"title": self.title, "text": self.text}
        if self.id is not None:
            record["id"] = self.id
        if self.metadata:
            record["metadata"] = self.metadata
        return record


_NEW_INDEX_METHOD = ("the index method for a new index (default: the server's default); "
                     "ignored for an index that exists")
_LLM_MODE = Field(description=(
    "how the job's LLM calls are made: sync (one request at a time) or batch (the "
    "provider's Batch API: about half the price, results within hours, the job in state "
    "waiting_on_provider meanwhile); leave it out for the index's default"))


class IngestTextArguments(ToolArguments):
    index: Annotated[IndexName, Field(description="the index to add to; created when new")]
    records: Annotated[list[Record], Field(
        min_length=1, max_length=MAX_INLINE_RECORDS,
        description="the documents; each fails alone (the job lists bad ones)")]
    method: _method(_NEW_INDEX_METHOD) = None  # type: ignore[valid-type]
    llm_mode: Annotated[LlmModeName, _LLM_MODE] = None


class IngestPathsArguments(ToolArguments):
    index: Annotated[IndexName, Field(description="the index to add to; created when new")]
    paths: Annotated[list[NotBlank()], Field(  # type: ignore[valid-type]
        min_length=1, max_length=MAX_INLINE_RECORDS,
        description="files or folders on this machine: PDF, HTML, DOCX, Markdown, text, "
                    "JSON or JSONL records; a folder is read recursively")]
    method: _method(_NEW_INDEX_METHOD) = None  # type: ignore[valid-type]
    llm_mode: Annotated[LlmModeName, _LLM_MODE] = None
    split_by: Annotated[SplitBy, Field(
        description="how PDF, HTML, DOCX and Markdown files become documents: one per "
                    "section (default), per page, or per file")] = SplitBy.SECTION
    include: Annotated[list[str], Field(
        max_length=100, description="globs a folder's files must match (default: all)")
                       ] = Field(default_factory=list)
    exclude: Annotated[list[str], Field(
        max_length=100, description="globs of a folder's files to skip")
                       ] = Field(default_factory=list)


class JobArguments(ToolArguments):
    job_id: Annotated[NotBlank(200), Field(  # type: ignore[valid-type]
        description="the job id an ingest or delete tool returned")]


class WaitArguments(JobArguments):
    timeout_s: Annotated[JsonInt(1, MAX_WAIT_S), Field(  # type: ignore[valid-type]
        description=f"the most seconds to wait (default {DEFAULT_WAIT_S}); the job goes on "
                    "after a timeout, so call again to keep waiting")] = DEFAULT_WAIT_S


class DeleteArguments(ToolArguments):
    index: Annotated[IndexName, _INDEX]
    doc_ids: Annotated[list[DocumentId], Field(
        min_length=1, max_length=MAX_DELETE_IDS,
        description="the ids of the documents to delete (search results carry them)")]
