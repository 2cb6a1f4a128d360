"""A job's LLM mode: the request's, else the index's default, else the setting's; a
value that is no mode refused naming the field and the modes (core/llm_modes.py)."""

from __future__ import annotations

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.core.llm_modes import (
    INDEX_OPTION,
    JobMode,
    ModeSource,
    batch_price,
    index_mode,
    job_mode,
    parse_llm_mode,
    with_index_mode,
)
from hopindex.core.settings import LlmMode


def test_a_job_runs_in_the_requests_mode_else_the_indexs_else_the_settings() -> None:
    """Each source in turn, and where the mode came from."""
    batch_index = {INDEX_OPTION: "batch", "budget": {"max_cost": 1}}
    assert job_mode(LlmMode.SYNC, batch_index, LlmMode.BATCH) == JobMode(
        LlmMode.SYNC, ModeSource.REQUEST)
    assert job_mode(None, batch_index, LlmMode.SYNC) == JobMode(LlmMode.BATCH,
                                                                ModeSource.INDEX)
    assert job_mode(None, {"budget": {}}, LlmMode.BATCH) == JobMode(LlmMode.BATCH,
                                                                    ModeSource.SETTINGS)


@pytest.mark.parametrize("value", ["fast", "BATCH", "", 1, True, ["sync"]])
def test_a_value_that_is_no_mode_is_refused_naming_the_field_and_the_modes(
        value: object) -> None:
    """Anything but a mode's name is an input error on ``llm_mode`` listing sync and
    batch; not given (None) is no mode, not an error."""
    with pytest.raises(InvalidInputError) as refused:
        parse_llm_mode(value)
    assert refused.value.where == "llm_mode"
    assert str(refused.value).startswith("llm_mode: must be one of sync, batch, got ")
    assert parse_llm_mode(None) is None
    assert parse_llm_mode("batch") is LlmMode.BATCH


def test_the_index_default_is_set_and_removed_beside_its_other_options() -> None:
    """Setting the default keeps the index's budget; removing it leaves no key; a stored
    default that is no mode is refused naming the option."""
    options = with_index_mode({"budget": {"max_cost": 2}}, LlmMode.BATCH)
    assert options == {"budget": {"max_cost": 2}, INDEX_OPTION: "batch"}
    assert index_mode(options) is LlmMode.BATCH
    assert with_index_mode(options, None) == {"budget": {"max_cost": 2}}
    assert index_mode({}) is None
    with pytest.raises(InvalidInputError) as refused:
        index_mode({INDEX_OPTION: "turbo"})
    assert refused.value.where == INDEX_OPTION


def test_the_batch_price_takes_the_discount_off() -> None:
    """Half off at the default discount; nothing off at 0."""
    assert batch_price(3.0, 0.5) == pytest.approx(1.5)
    assert batch_price(3.0, 0.0) == pytest.approx(3.0)
