"""Settings from the environment: read once, typed per field, errors naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopindex.core.errors import ConfigError
from hopindex.core.models import Job, JobKind, LlmUsage
from hopindex.core.settings import CacheMode, Settings
from hopindex.methods.registry import load_settings, method_settings


def test_defaults_are_embedded_and_without_llm() -> None:
    """No variables: embedded URLs under the data dir, no LLM, cache on."""
    settings = Settings.from_env({})
    assert settings.vector_url == f"qdrant-edge://{Path('.hopindex') / 'vectors'}"
    assert not settings.llm_enabled
    assert settings.llm_cache is CacheMode.ON


def test_llm_variables_are_read_with_their_types() -> None:
    """Strings, integers, floats and the cache enum each parse from their variable."""
    settings = Settings.from_env({
        "HOPINDEX_LLM_MODEL": "gpt-4o-mini", "HOPINDEX_LLM_BASE_URL": "http://127.0.0.1:8000/v1",
        "HOPINDEX_LLM_API_KEY": "sk-local", "HOPINDEX_LLM_TIMEOUT_S": "12.5",
        "HOPINDEX_LLM_REQUESTS_PER_MINUTE": "600", "HOPINDEX_LLM_TOKENS_PER_MINUTE": "200000",
        "HOPINDEX_LLM_CACHE": "OFF", "HOPINDEX_LLM_CONCURRENCY": "4"})
    assert settings.llm_enabled
    assert settings.llm_model == "gpt-4o-mini"
    assert settings.llm_base_url == "http://127.0.0.1:8000/v1"
    assert settings.llm_api_key == "sk-local"
    assert settings.llm_timeout_s == 12.5
    assert (settings.llm_requests_per_minute, settings.llm_tokens_per_minute) == (600, 200_000)
    assert settings.llm_cache is CacheMode.OFF
    assert settings.llm_concurrency == 4


def test_openai_api_key_is_the_fallback_and_never_printed() -> None:
    """OPENAI_API_KEY fills the key when HOPINDEX_LLM_API_KEY is absent, loses to it when
    both are set, and the key never appears in the settings' repr (logs, tracebacks)."""
    env = {"HOPINDEX_LLM_MODEL": "m", "OPENAI_API_KEY": "sk-secret-from-openai"}
    settings = Settings.from_env(env)
    assert settings.llm_api_key == "sk-secret-from-openai"
    assert "sk-secret" not in repr(settings)
    both = Settings.from_env({**env, "HOPINDEX_LLM_API_KEY": "sk-hopindex"})
    assert both.llm_api_key == "sk-hopindex"


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("HOPINDEX_LLM_TIMEOUT_S", "soon", "HOPINDEX_LLM_TIMEOUT_S must be a number"),
    ("HOPINDEX_LLM_TIMEOUT_S", "0", "HOPINDEX_LLM_TIMEOUT_S must be a positive"),
    ("HOPINDEX_LLM_CACHE", "sometimes", "HOPINDEX_LLM_CACHE must be one of on, off"),
    ("HOPINDEX_LLM_REQUESTS_PER_MINUTE", "-1", "HOPINDEX_LLM_REQUESTS_PER_MINUTE must be 0"),
    ("HOPINDEX_LLM_CONCURRENCY", "0", "HOPINDEX_LLM_CONCURRENCY must be positive"),
    ("HOPINDEX_LLM_CACHE_URL", "memcached://x", "HOPINDEX_LLM_CACHE_URL must be a redis://"),
    ("HOPINDEX_LLM_BASE_URL", "localhost:8000", "HOPINDEX_LLM_BASE_URL must be a URL"),
])
def test_bad_values_name_their_variable(variable: str, value: str, message: str) -> None:
    """Each bad value raises a ConfigError naming the variable and what it expects."""
    with pytest.raises(ConfigError, match=message):
        Settings.from_env({"HOPINDEX_LLM_MODEL": "m", variable: value})


@pytest.mark.parametrize(("variable", "value", "message"), [
    # A typo used to turn certificate checks off: anything not a boolean word is refused.
    ("HOPINDEX_ES_VERIFY_CERTS", "ture", r"must be a boolean \(true, 1, yes, on or false"),
    ("HOPINDEX_QDRANT_PREFER_GRPC", "", "HOPINDEX_QDRANT_PREFER_GRPC must be a boolean"),
    ("HOPINDEX_LOG_FORMAT", "jsno", "HOPINDEX_LOG_FORMAT must be one of console, json, got 'jsno'"),
    ("HOPINDEX_LOG_LEVEL", "verbose", "HOPINDEX_LOG_LEVEL must be one of debug, info, warning"),
    ("HOPINDEX_LLM_TIMEOUT_S", "nan", "HOPINDEX_LLM_TIMEOUT_S must be a finite number"),
    ("HOPINDEX_STAGE1_BATCH_DOCS", "1e400",
     "HOPINDEX_STAGE1_BATCH_DOCS must be an integer, got '1e400'"),
    ("HOPINDEX_LOG_FORMATT", "json",
     r"unknown setting\(s\): HOPINDEX_LOG_FORMATT \(did you mean HOPINDEX_LOG_FORMAT\?\)"),
])
def test_strict_values_and_names(variable: str, value: str, message: str) -> None:
    """Booleans, enums, numbers and names are parsed strictly: a typo stops the process
    naming the variable, the value and what is accepted, instead of a silent default."""
    with pytest.raises(ConfigError, match=message):
        Settings.from_env({variable: value})


@pytest.mark.parametrize(("environ", "message"), [
    ({"HOPINDEX_EXTRACTIVE_TAU": "1e400"},
     "HOPINDEX_EXTRACTIVE_TAU must be an integer, got '1e400'"),
    ({"HOPINDEX_EXTRACTIVE_TAU": "1"}, "HOPINDEX_EXTRACTIVE_TAU must be at least 2, got 1"),
    ({"HOPINDEX_BRIDGERAG_RECORDS": "csv"}, "HOPINDEX_BRIDGERAG_RECORDS must be one of off, jsonl"),
    ({"HOPINDEX_EXTRACTIVE_TAUU": "3"},
     r"HOPINDEX_EXTRACTIVE_TAUU \(did you mean HOPINDEX_EXTRACTIVE_TAU\?\)"),
    ({"HOPINDEX_TAU": "5"}, "HOPINDEX_TAU was renamed: set HOPINDEX_EXTRACTIVE_TAU"),
])
def test_method_settings_are_parsed_by_their_method(environ: dict[str, str],
                                                    message: str) -> None:
    """A method's HOPINDEX_<METHOD>_* variables are parsed strictly by the method, and a
    setting that moved to a method names its new variable."""
    with pytest.raises(ConfigError, match=message):
        load_settings(environ)


def test_method_settings_reach_the_method() -> None:
    """A valid method variable is the method's setting; others keep their defaults."""
    settings = load_settings({"HOPINDEX_EXTRACTIVE_TAU": "7"})
    assert method_settings(settings, "extractive").tau == 7
    assert method_settings(settings, "indexrag").tau == 10
    assert settings.to_env()["HOPINDEX_EXTRACTIVE_TAU"] == "7"


def test_boolean_words_and_enum_case() -> None:
    """Every accepted spelling of a boolean parses; enum values ignore case; the test and
    benchmark harness variables are not settings and are let through."""
    for word, expected in (("true", True), ("YES", True), ("1", True), ("on", True),
                           ("false", False), ("No", False), ("0", False), ("off", False)):
        assert Settings.from_env({"HOPINDEX_ES_VERIFY_CERTS": word}).es_verify_certs is expected
    settings = Settings.from_env({"HOPINDEX_LOG_LEVEL": "INFO", "HOPINDEX_LOG_FORMAT": "Json",
                                  "HOPINDEX_TEST_ES_URL": "elasticsearch://x:9200"})
    assert settings.log_level.value == "info" and settings.log_format.value == "json"
    assert Settings(log_level="ERROR").log_level.value == "error"  # type: ignore[arg-type]


def test_shared_redis_defaults_to_a_redis_broker() -> None:
    """With a Redis broker the limiter and cache share it unless told otherwise; with no
    broker they stay in-process (empty URL)."""
    broker = Settings.from_env({"HOPINDEX_BROKER_URL": "redis://queue:6379/0"})
    assert broker.shared_redis_url(broker.llm_limiter_url) == "redis://queue:6379/0"
    explicit = Settings.from_env({"HOPINDEX_BROKER_URL": "redis://queue:6379/0",
                                  "HOPINDEX_LLM_LIMITER_URL": "redis://limits:6379/2"})
    assert explicit.shared_redis_url(explicit.llm_limiter_url) == "redis://limits:6379/2"
    assert Settings.from_env({}).shared_redis_url("") == ""


def test_job_llm_usage_per_stage_round_trips() -> None:
    """The job record keeps usage per stage and totals it; as_dict/from_dict keep both."""
    job = Job(job_id="j", index="i", kind=JobKind.INGEST)
    job.add_llm_usage({"stage1": LlmUsage(calls=3, prompt_tokens=30, completion_tokens=9)})
    job.add_llm_usage({"stage1": LlmUsage(calls=1, cache_hits=2),
                       "stage2": LlmUsage(calls=2, prompt_tokens=5, retries=1)})
    assert job.llm["stage1"].calls == 4 and job.llm["stage1"].cache_hits == 2
    assert job.llm_total.calls == 6 and job.llm_total.prompt_tokens == 35
    data = job.as_dict()
    assert data["llm"]["calls"] == 6 and data["llm"]["stages"]["stage2"]["retries"] == 1
    assert Job.from_dict(data).llm == job.llm


def test_event_retention_is_a_count_of_one_or_more() -> None:
    """HOPINDEX_EVENT_RETENTION is how many events the event log keeps (100,000 unless
    set); 0, a negative count or a word stops the process naming the variable."""
    assert Settings.from_env({}).event_retention == 100_000
    assert Settings.from_env({"HOPINDEX_EVENT_RETENTION": "5"}).event_retention == 5
    for value, message in (("0", "must be 1 or more"), ("-3", "must be 1 or more"),
                           ("lots", "must be an integer")):
        with pytest.raises(ConfigError, match=f"HOPINDEX_EVENT_RETENTION {message}"):
            Settings.from_env({"HOPINDEX_EVENT_RETENTION": value})
