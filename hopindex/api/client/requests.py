"""The client's request types: the JSON bodies the HTTP API reads, as pydantic models.

One declaration says what a body may hold and is checked by: the server validates a
body with ``model_validate`` and publishes ``model_json_schema`` as its OpenAPI
component, so the two cannot drift apart. What JSON and the service mean that
pydantic's defaults do not is stated here once: a JSON number with no fraction is an
integer (5.0 is 5) while ``true`` and ``"5"`` are not numbers; blank text is refused
as ``str.strip`` sees it (``NOT_BLANK``); an optional field sent as null means its
default. A refusal is a ``PydanticCustomError`` of type ``REFUSED`` whose context
holds the message (``what`` is wrong with the field, or the whole ``message``) and,
when it differs from the default, the ``status``, ``code`` and ``field``: the server
answers with those (api/http/params.py translates every pydantic error).

What depends on the server's settings (the longest question, how many ids one
request may name, which index methods need an LLM) is checked by the server, or
given through the validation context (``MAX_IDS_CONTEXT``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.ids import INDEX_NAME_PATTERN, validate_index_name
from hopindex.core.json_input import shown_number
from hopindex.core.llm_modes import parse_llm_mode
from hopindex.core.settings import LlmMode
from hopindex.methods.base import MAX_CANDIDATES, MAX_K, FusionMode, QueryOptions, Retrieval
from hopindex.methods.registry import index_method_names, list_operations, query_method_names

REFUSED = "hopindex_refused"
# The validation context's key for the most ids one request may name (a setting).
MAX_IDS_CONTEXT = "max_ids"
# At least one character that is not white space: blank strings are refused. White
# space as the handlers see it (str.strip, str.isspace), which is not the \s of a
# JSON Schema pattern: that one lacks \x1c-\x1f and \x85, and has \ufeff.
NOT_BLANK = (r"[^\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f"
             r"\u205f\u3000]")
MAX_METHOD_CHARS = 64
MAX_DOC_ID_CHARS = 1000
MAX_URL_CHARS = 2048
MAX_SECRET_CHARS = 256
DEFAULT_K = 5
LINK_REJECT = "links.reject"
# A Standard Webhooks secret: whsec_ and the base64 of 24 to 64 bytes; or (as before
# that form) any text that is not blank, whose UTF-8 bytes are the key. Published, and
# checked by the service (webhooks.secrets), which says what is wrong with one.
WEBHOOK_SECRET_PATTERN = (r"^(?:whsec_(?:[A-Za-z0-9+/]{4}){8,21}(?:[A-Za-z0-9+/]{2}==)?"
                          r"|whsec_(?:[A-Za-z0-9+/]{4}){8,20}[A-Za-z0-9+/]{3}="
                          r"|(?!whsec_)[\s\S]*" + NOT_BLANK + r"[\s\S]*)$")


def refused(what: str = "", *, message: str = "", field: str | None = None, status: int = 400,
            code: str = "invalid_input", **details: Any) -> PydanticCustomError:
    """A refusal the server answers as given: ``what`` is wrong with the field (the
    message is then "field 'NAME' ..."), or the whole ``message``."""
    return PydanticCustomError(REFUSED, "{text}", {
        "text": message or what, "what": what, "message": message, "field": field,
        "status": status, "code": code, "details": details})


def _name(info: ValidationInfo) -> str:
    return info.field_name or "value"


def _integer(low: int, high: int | None) -> Callable[[object, ValidationInfo], object]:
    def check(value: object, info: ValidationInfo) -> object:
        # bool is an int subclass: ``true`` is not a count. The range is checked on the
        # number as sent, so 1e308 is shown as that, not as 309 digits.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise refused("must be an integer")
        if value < low or (high is not None and value > high):
            bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise refused(f"must be {bounds}, got {shown_number(value)}")
        if isinstance(value, float):
            if not value.is_integer():
                raise refused(f"must be an integer, got {shown_number(value)}")
            return int(value)
        return value
    return check


def _non_negative(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refused("must be a finite number")
    if value < 0:
        raise refused(f"must be at least 0, got {shown_number(value)}")
    return float(value)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise refused("must not be empty")
    return value


def _index_name(value: str) -> str:
    try:
        return validate_index_name(value)
    except InvalidInputError as exc:
        raise refused(message=str(exc)) from None


def _choice(choices: Callable[[], Sequence[str]]) -> Callable[[str, ValidationInfo], str]:
    def check(value: str, info: ValidationInfo) -> str:
        if value not in (known := choices()):
            raise refused(message=f"{_name(info)!r} must be one of {', '.join(known)}, "
                                  f"got {value!r}")
        return value
    return check


def _enum(names: Callable[[], Sequence[str]]) -> Callable[[dict[str, Any]], None]:
    # Which names the registry holds is known when the schema is made, not imported.
    return lambda schema: schema.update(enum=list(names()))


def JsonInt(low: int, high: int | None = None) -> Any:  # noqa: N802 - a type
    """An integer as JSON has it, within ``low``..``high``."""
    # The bounds first, so that they are the integer's (its schema's minimum and
    # maximum); the check before them is what refuses, with the range in its message.
    return Annotated[int, Field(ge=low, le=high), BeforeValidator(_integer(low, high))]


def NotBlank(max_chars: int | None = None, **schema: Any) -> Any:  # noqa: N802 - a type
    """Text with something in it that is not white space, of at most ``max_chars``."""
    return Annotated[str, Field(max_length=max_chars,
                                json_schema_extra={"pattern": NOT_BLANK, **schema}),
                     AfterValidator(_not_blank)]


NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False), BeforeValidator(_non_negative)]
IndexName = Annotated[str, Field(json_schema_extra={"pattern": INDEX_NAME_PATTERN.pattern}),
                      AfterValidator(_index_name)]


class _Request(BaseModel):
    # Unknown fields are refused (a misspelt option is not silently ignored).
    model_config = ConfigDict(extra="forbid", frozen=True)


_WEIGHT = ("how much this engine's ranking counts in hybrid fusion; one engine may be "
           "silenced (0), not both")


class QueryRequest(_Request):
    """A query (POST /v1/indexes/{name}/query): at most 1,000,000 bytes of JSON; an
    optional field sent as null means its default, as if left out."""

    question: NotBlank()  # type: ignore[valid-type]
    method: Annotated[str, Field(max_length=MAX_METHOD_CHARS,
                                 json_schema_extra=_enum(query_method_names),
                                 description=(
        "the query method (default: the first default query method of the index's "
        "method); one that cannot read the index's units is a 400 naming those that "
        "can; those that answer with an LLM need one configured (else 422)")),
                      AfterValidator(_known_query_method)] | None = None
    k: JsonInt(1, MAX_K) | None = DEFAULT_K  # type: ignore[valid-type]
    retrieval: Retrieval | None = None
    fusion: FusionMode | None = None
    candidates: Annotated[JsonInt(1, MAX_CANDIDATES),  # type: ignore[valid-type]
                          Field(description="hits fetched per engine before fusion (raised "
                                            "to k when smaller)")] | None = None
    dense_weight: Annotated[NonNegative, Field(description=_WEIGHT)] | None = 1.0
    keyword_weight: Annotated[NonNegative, Field(description=_WEIGHT)] | None = 1.0
    options: dict[str, str | int | float | bool] | None = Field(
        None, description="the query method's own options (QueryOptions.params), and "
                          "rerank (on|off), which every method takes")
    # Strict: a JSON 0 or "yes" is no answer to "stream or not?".
    stream: StrictBool | None = Field(
        None, description="true: answer with server-sent events (passages, answer.delta, "
                          "usage, then done or degraded; error on a failure after the "
                          "first) instead of one JSON body; default: true when the "
                          "request accepts text/event-stream")

    @field_validator("options", mode="before")
    @classmethod
    def _options(cls, value: object) -> object:
        if value is None:
            return value
        if not isinstance(value, dict):
            raise refused("must be an object of method-specific options")
        for name, option in value.items():
            if not name:
                raise refused(message="option names must be non-empty")
            if isinstance(option, dict | list) or option is None:
                raise refused(message=f"option {name!r} must be a string, number or boolean",
                              field=f"options.{name}")
        return value

    def query_options(self) -> QueryOptions:
        """The service's QueryOptions; ``options`` become its method-specific ``params``
        (the method that reads them checks them)."""
        k = self.k or DEFAULT_K
        weights = {name: weight for name in ("dense_weight", "keyword_weight")
                   if (weight := getattr(self, name)) is not None}
        return QueryOptions(k=k, retrieval=self.retrieval, fusion=self.fusion or FusionMode.RRF,
                            # Fewer candidates than k cannot fill k: raised to k, as documented.
                            candidates=None if self.candidates is None
                            else max(self.candidates, k),
                            params=dict(self.options or {}), **weights)


def _known_query_method(value: str) -> str:
    if value not in (known := query_method_names()):
        raise refused(message=f"unknown method {value!r}; known: {', '.join(known)}")
    return value


_TOKENS = ("the most prompt and completion tokens the job's LLM calls may use, in all")
_COST = ("the most the job's LLM calls may cost, in all, at the prices the server sets "
         "(HOPINDEX_LLM_PRICE_*), in their currency; a 422 (not_configured) on a server "
         "with no prices")


class BudgetRequest(_Request):
    """An LLM budget as a request gives it (a resume, an index's default): a limit left
    out or null is not given."""

    model_config = ConfigDict(title="BudgetLimits")

    max_llm_tokens: Annotated[JsonInt(0),  # type: ignore[valid-type]
                              Field(description=_TOKENS)] | None = None
    max_cost: Annotated[NonNegative, Field(description=_COST)] | None = None

    def limits(self) -> BudgetLimits:
        return BudgetLimits(max_llm_tokens=self.max_llm_tokens, max_cost=self.max_cost)


def _llm_mode(value: object) -> object:
    # Refused in the words of every other door (core/llm_modes.py): the local client, the
    # CLI's flag and the query parameter name the field and the modes alike.
    try:
        return parse_llm_mode(value)
    except InvalidInputError as exc:
        raise refused(message=str(exc)) from None


LlmModeName = Annotated[LlmMode | None, BeforeValidator(_llm_mode)]


class LlmModeRequest(_Request):
    """An index's default LLM mode as a request sets it: null or left out removes it."""

    llm_mode: Annotated[LlmModeName, Field(description=(
        "how the index's later jobs that name no mode make their LLM calls: sync (one "
        "request at a time) or batch (the provider's Batch API, about half the price, "
        "results within its completion window)"))] = None


class CreateIndex(_Request):
    """A new index: its name and index method (null: the default, as if left out)."""

    name: IndexName
    method: Annotated[str, AfterValidator(_choice(index_method_names)),
                      Field(json_schema_extra=_enum(index_method_names))] | None = None


def _not_null(name: str) -> Callable[[dict[str, Any]], None]:
    # Left out, the field has no value (None); null itself is refused, so the schema
    # offers neither null nor a default of null.
    def schema_of(schema: dict[str, Any]) -> None:
        field = schema["properties"][name]
        schema["properties"][name] = {**field.pop("anyOf")[0], **field}
        schema["properties"][name].pop("default", None)
    return schema_of


class NewWebhook(_Request):
    """A webhook to register for an index's events."""

    model_config = ConfigDict(json_schema_extra=_not_null("secret"))

    index: IndexName
    # The URL's scheme and host as the schema states them; the service checks them
    # and says what is wrong with one.
    url: NotBlank(MAX_URL_CHARS, format="uri",  # type: ignore[valid-type]
                  pattern="^https?://[^/:?#\\s]+", description=(
        "where events are POSTed; a 400 naming url when its host is, in any spelling, a "
        "loopback, private, link-local, cloud metadata, multicast, reserved or "
        "unspecified address or a localhost name (unless the server sets "
        "HOPINDEX_WEBHOOK_ALLOW_PRIVATE, which the webhook then keeps: see "
        "allow_private)"))
    secret: NotBlank(MAX_SECRET_CHARS,  # type: ignore[valid-type]
                     pattern=WEBHOOK_SECRET_PATTERN, description=(
        "the signing key, whsec_ + base64 of 24 to 64 bytes (other text: its UTF-8 "
        "bytes); omit it for a random one. The answer shows it once, in whsec_ form; "
        "null is refused")) | None = None

    @field_validator("index", "url", "secret", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        # Present means given: ``"secret": null`` is a wrong type, as the schema says,
        # not "make one up" (what leaving the field out asks for).
        if value is None:
            raise refused("must be a string, not null")
        return value


DocumentId = Annotated[str, Field(max_length=MAX_DOC_ID_CHARS,
                                  json_schema_extra={"pattern": NOT_BLANK}),
                       AfterValidator(_not_blank)]


class DeleteDocuments(_Request):
    """The documents to delete from an index, by id."""

    ids: list[DocumentId] = Field(min_length=1)

    @field_validator("ids", mode="before")
    @classmethod
    def _count(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, list) or not value:
            raise refused("must be a non-empty list of document ids")
        limit = (info.context or {}).get(MAX_IDS_CONTEXT)
        if limit is not None and len(value) > limit:
            raise refused(message=f"{len(value):,} ids, over the limit of {limit:,} per "
                                  "request (HOPINDEX_API_MAX_DOCUMENTS)",
                          status=413, code="too_many_documents", limit=limit)
        return value


@cache
def max_by_chars() -> int:
    """The limit of a rejection's ``by``, as the method registering ``links.reject``
    sets it."""
    for operation in list_operations():
        if operation.name == LINK_REJECT:
            return next(p.max_chars for p in operation.params if p.name == "by")
    raise ConfigError(f"no installed method registers the operation {LINK_REJECT!r}")


def _by_limit(value: str) -> str:
    if len(value) > (limit := max_by_chars()):
        raise refused(f"is {len(value):,} characters, over the limit of {limit:,}",
                      code="too_long")
    return value


class RejectLink(_Request):
    """The rejection of a SAME_AS link, saying who rejects it."""

    # The limit is the operation's, read from the registry when the schema is made.
    by: Annotated[str, Field(description="who rejects the link, kept with the rejection",
                             json_schema_extra=lambda schema: schema.update(
                                 pattern=NOT_BLANK, maxLength=max_by_chars())),
                  AfterValidator(_not_blank), AfterValidator(_by_limit)]
