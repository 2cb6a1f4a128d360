"""LLM prices: read once from the environment, turned into money per call, summed per stage,
job and query without ever inventing a figure for unpriced calls."""

from __future__ import annotations

import pytest
from rich.console import Console

from hopindex.api.render import cost_text, render_job
from hopindex.backends.llm.usage import LlmPrices, UsageMeter
from hopindex.core.errors import ConfigError
from hopindex.core.models import Job, JobKind, LlmUsage, total_usage
from hopindex.core.settings import Settings
from hopindex.methods.base import QueryUsage

INPUT = "HOPINDEX_LLM_PRICE_INPUT_PER_MTOK"
OUTPUT = "HOPINDEX_LLM_PRICE_OUTPUT_PER_MTOK"


def test_prices_parse_from_their_variables() -> None:
    """Both prices parse as numbers per million tokens; 0 (a free local model) is a
    price, not an absence."""
    settings = Settings.from_env({INPUT: "0.15", OUTPUT: " 0.6 "})
    assert (settings.llm_price_input_per_mtok, settings.llm_price_output_per_mtok) == (0.15, 0.6)
    free = Settings.from_env({INPUT: "0", OUTPUT: "0"})
    assert (free.llm_price_input_per_mtok, free.llm_price_output_per_mtok) == (0.0, 0.0)


def test_unset_prices_are_none_and_survive_a_trip_through_the_environment() -> None:
    """No variable (or an empty one) leaves the prices unset; ``to_env`` writes them as
    empty, which a child process reads back as unset, and set prices come back equal."""
    assert Settings.from_env({}).llm_price_input_per_mtok is None
    blank = Settings.from_env({INPUT: "", OUTPUT: "  "})
    assert (blank.llm_price_input_per_mtok, blank.llm_price_output_per_mtok) == (None, None)
    env = Settings.from_env({}).to_env()
    assert env[INPUT] == env[OUTPUT] == ""
    assert Settings.from_env(env).llm_price_output_per_mtok is None
    priced = Settings.from_env({INPUT: "2.5", OUTPUT: "10"})
    again = Settings.from_env(priced.to_env())
    assert (again.llm_price_input_per_mtok, again.llm_price_output_per_mtok) == (2.5, 10.0)


@pytest.mark.parametrize("variable", [INPUT, OUTPUT])
@pytest.mark.parametrize("value", ["-0.01", "-3"])
def test_a_negative_price_is_a_config_error_naming_the_variable(variable: str,
                                                                 value: str) -> None:
    """A negative price stops the process, naming the variable and the value."""
    env = {INPUT: "1", OUTPUT: "1", variable: value}
    with pytest.raises(ConfigError, match=variable) as caught:
        Settings.from_env(env)
    assert str(float(value)) in str(caught.value)


@pytest.mark.parametrize("variable", [INPUT, OUTPUT])
@pytest.mark.parametrize("value", ["cheap", "$0.15", "nan", "inf", "1,5"])
def test_a_non_numeric_price_is_a_config_error_naming_the_variable(variable: str,
                                                                    value: str) -> None:
    """Text, a currency sign, NaN, infinity or a decimal comma is refused by name."""
    env = {INPUT: "1", OUTPUT: "1", variable: value}
    with pytest.raises(ConfigError, match=variable):
        Settings.from_env(env)


@pytest.mark.parametrize("given", [INPUT, OUTPUT])
def test_one_price_alone_is_a_config_error(given: str) -> None:
    """A prompt price without a completion price (or the reverse) would report part of
    the bill as all of it: refused, naming both variables."""
    with pytest.raises(ConfigError, match=f"{INPUT}.*{OUTPUT}"):
        Settings.from_env({given: "1"})


def test_prices_set_by_a_program_are_validated_too() -> None:
    """Settings built in code (tests, benchmarks) are checked like the environment's."""
    with pytest.raises(ConfigError, match=INPUT):
        Settings(llm_price_input_per_mtok=-1.0, llm_price_output_per_mtok=1.0).resolved()
    with pytest.raises(ConfigError, match="price"):
        LlmPrices(input_per_mtok=1.0, output_per_mtok=float("nan"))
    with pytest.raises(ConfigError, match="both"):
        LlmPrices(input_per_mtok=1.0)


def test_prompt_and_completion_tokens_are_priced_separately_per_million() -> None:
    """cost = prompt * input price / 1e6 + completion * output price / 1e6; unpriced is
    None, never 0."""
    prices = LlmPrices(input_per_mtok=3.0, output_per_mtok=15.0)
    assert prices.cost_of(1_000_000, 0) == pytest.approx(3.0)
    assert prices.cost_of(0, 1_000_000) == pytest.approx(15.0)
    assert prices.cost_of(1200, 300) == pytest.approx(1200 * 3.0 / 1e6 + 300 * 15.0 / 1e6)
    assert prices.cost_of(0, 0) == 0.0
    assert LlmPrices().cost_of(1200, 300) is None
    assert not LlmPrices().is_priced and prices.is_priced


def test_usage_sums_costs_and_an_unpriced_call_makes_the_sum_unknown() -> None:
    """Priced calls add up; a cache hit at set prices costs 0; an empty usage adds
    nothing; any unpriced call in the sum makes the cost None rather than short."""
    meter = UsageMeter()
    meter.record_call("a", prompt_tokens=100, completion_tokens=10, waited_s=0.0, retries=0,
                      cost=0.25)
    meter.record_call("a", prompt_tokens=100, completion_tokens=10, waited_s=0.0, retries=0,
                      cost=0.5)
    meter.record_cache_hit("b", cost=0.0)
    assert meter.snapshot()["a"].cost == pytest.approx(0.75)
    assert meter.snapshot()["b"].cost == 0.0
    assert meter.total().cost == pytest.approx(0.75)
    meter.record_call("c", prompt_tokens=1, completion_tokens=1, waited_s=0.0, retries=0)
    assert meter.snapshot()["c"].cost is None
    assert meter.total().cost is None
    assert total_usage([]).cost is None
    assert total_usage([LlmUsage(), LlmUsage(calls=1, cost=2.0)]).cost == 2.0
    assert total_usage([LlmUsage(calls=1, cost=2.0), LlmUsage(calls=1)]).cost is None


def test_a_job_record_keeps_each_phase_cost_and_sums_the_total() -> None:
    """The record serialises each phase's cost and the total, reads them back as stored
    (no price is applied on reading), and leaves ``cost`` out where unpriced."""
    job = Job(job_id="j", index="i", kind=JobKind.INGEST)
    job.add_llm_usage({"m.stage1": LlmUsage(calls=2, prompt_tokens=10, cost=0.125),
                       "m.stage2": LlmUsage(calls=1, completion_tokens=5, cost=0.5)})
    data = job.as_dict()
    assert data["llm"]["cost"] == pytest.approx(0.625)
    assert data["llm"]["stages"]["m.stage1"]["cost"] == 0.125
    back = Job.from_dict(data)
    assert back.llm["m.stage2"].cost == 0.5
    assert back.llm_total.cost == pytest.approx(0.625)
    unpriced = Job(job_id="u", index="i", kind=JobKind.INGEST)
    unpriced.add_llm_usage({"m.stage1": LlmUsage(calls=2, prompt_tokens=10)})
    data = unpriced.as_dict()
    assert "cost" not in data["llm"] and "cost" not in data["llm"]["stages"]["m.stage1"]
    assert Job.from_dict(data).llm["m.stage1"].cost is None


def test_query_usage_carries_the_cost_and_leaves_it_out_unpriced() -> None:
    """A query's usage sums its LLM usages' costs; unpriced, no ``cost`` key at all."""
    usage = QueryUsage()
    usage.add_llm(LlmUsage(calls=1, prompt_tokens=50, cost=0.001))
    usage.add_llm(LlmUsage(cache_hits=1, cost=0.0))
    assert usage.cost == pytest.approx(0.001)
    assert usage.as_dict()["cost"] == pytest.approx(0.001)
    unpriced = QueryUsage()
    unpriced.add_llm(LlmUsage(calls=1, prompt_tokens=50))
    assert unpriced.cost is None and "cost" not in unpriced.as_dict()


def test_the_cli_shows_cost_only_when_priced() -> None:
    """``hopindex jobs`` prints each phase's cost and the total when priced, and no cost
    (not a zero) when unpriced."""
    assert cost_text(None) == ""
    assert cost_text(1.23456) == ", cost 1.2346"
    assert cost_text(0.000123) == ", cost 0.000123"
    job = Job(job_id="j", index="i", kind=JobKind.INGEST)
    job.add_llm_usage({"m.stage1": LlmUsage(calls=2, prompt_tokens=10, cost=0.125),
                       "m.stage2": LlmUsage(calls=1, completion_tokens=5, cost=0.5)})
    console = Console(record=True, width=200)
    render_job(console, job)
    shown = console.export_text()
    assert "LLM m.stage1: 2 calls" in shown and "tokens, cost 0.1250," in shown
    assert "LLM total: 3 calls, 10 prompt + 5 completion tokens, cost 0.6250" in shown
    unpriced = Job(job_id="u", index="i", kind=JobKind.INGEST)
    unpriced.add_llm_usage({"m.stage1": LlmUsage(calls=2, prompt_tokens=10)})
    console = Console(record=True, width=200)
    render_job(console, unpriced)
    shown = console.export_text()
    assert "LLM m.stage1: 2 calls" in shown and "cost" not in shown


EMBEDDING = "HOPINDEX_EMBEDDING_PRICE_PER_MTOK"


def test_the_embedding_price_parses_alone_and_defaults_to_unset() -> None:
    """The embedding price is one number per million tokens, needs no LLM price beside
    it, and is unset (None, not 0) when absent or empty."""
    assert Settings.from_env({EMBEDDING: "0.02"}).embedding_price_per_mtok == 0.02
    assert Settings.from_env({}).embedding_price_per_mtok is None
    assert Settings.from_env({EMBEDDING: " "}).embedding_price_per_mtok is None
    again = Settings.from_env(Settings.from_env({EMBEDDING: "0.13"}).to_env())
    assert again.embedding_price_per_mtok == 0.13


@pytest.mark.parametrize("value", ["-0.02", "cheap", "$0.02", "nan", "inf", "1,5"])
def test_a_bad_embedding_price_is_a_config_error_naming_the_variable(value: str) -> None:
    """A negative, non-numeric or non-finite embedding price stops the process by name."""
    with pytest.raises(ConfigError, match=EMBEDDING):
        Settings.from_env({EMBEDDING: value})
    with pytest.raises(ConfigError, match=EMBEDDING):
        Settings(embedding_price_per_mtok=-1.0).resolved()
