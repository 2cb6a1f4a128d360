"""CompactRAG's local models run at the sizes and decoding the authors' code uses: the
extractor reads 384 tokens, the rewriter 128 tokens in, decoded by a 4-beam search.

The tiny random-weight models here are built wider than those limits (512 tokens, as
RoBERTa-base and flan-t5 take), so that the limits seen are the method's own. They show
what reaches the model, not the quality of an answer: no trained weights ship here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hopindex.methods.compactrag.modules import HfRewriter, HfSpanExtractor, QaContext
from tests.methods.compactrag.tiny_models import save_tiny_extractor, save_tiny_rewriter

WIDE = 512


@pytest.fixture(scope="module")
def wide_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compactrag_wide_models")
    save_tiny_extractor(root / "extractor", max_length=WIDE)
    save_tiny_rewriter(root / "rewriter", max_length=WIDE)
    return root / "extractor", root / "rewriter"


def test_the_extractor_reads_384_tokens_at_a_time(wide_models: tuple[Path, Path]) -> None:
    """A context far longer than 384 tokens reaches a 512-token model as several
    windows of exactly 384 tokens, and the answer is still a span of one unit."""
    extractor = HfSpanExtractor(str(wide_models[0]))
    model: Any = extractor._loaded.model
    lengths: list[list[int]] = []

    def record(_module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        lengths.append(list(kwargs["input_ids"].shape))

    contexts = [QaContext(f"Who directed Lilli's Marriage {n}?", f"Jaap Speyer {n}", 1.0)
                for n in range(80)]
    handle = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        result = extractor.extract_answer("Who directed Lilli's Marriage?", contexts)
    finally:
        handle.remove()
    assert len(lengths) == 1
    windows, tokens = lengths[0]
    assert windows > 1 and tokens == 384
    assert result.source_index is not None
    unit = contexts[result.source_index]
    assert result.text and result.text in f"{unit.question} {unit.answer}"


def test_the_rewriter_searches_4_beams_over_128_input_tokens(
        wide_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """``generate`` gets 4 beams with early stopping and a 64-token output, no sampling,
    and an input cut to 128 tokens although the tokenizer takes 512; the search runs
    and gives a string."""
    rewriter = HfRewriter(str(wide_models[1]))
    model: Any = rewriter._loaded.model
    calls: list[dict[str, Any]] = []
    generate = model.generate

    def recording(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return generate(**kwargs)

    monkeypatch.setattr(model, "generate", recording)
    long_question = "Where was he born " * 60
    assert isinstance(rewriter.generate_rewrite(f"Q: {long_question} | prev_answer: Ulm"), str)
    assert len(calls) == 1
    kwargs = calls[0]
    assert (kwargs["num_beams"], kwargs["early_stopping"], kwargs["do_sample"]) == (4, True,
                                                                                   False)
    assert kwargs["max_length"] == 64
    assert kwargs["input_ids"].shape[-1] == 128
