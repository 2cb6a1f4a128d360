"""Tiny random-weight models saved locally, for the mechanics of CompactRAG's local-model
path: a BERT span extractor and a T5 rewriter over a word-level vocabulary built here,
so nothing is ever downloaded."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hopindex.methods.compactrag.modules import QaContext

EINSTEIN = [
    QaContext("Where was Albert Einstein born?", "Ulm, Germany", 0.9),
    QaContext("What is the height of the Eiffel Tower?", "324 meters", 0.4),
    QaContext("Who directed Lilli's Marriage?", "Jaap Speyer", 0.2),
]

_WORDS = re.findall(r"[a-z]+", " ".join(f"{unit.question} {unit.answer}" for unit in EINSTEIN)
                    .lower() + " he it rewrite question so that names entity earlier")


def _word_level_tokenizer(specials: list[str], template: str, pair: str | None,
                          max_length: int, *, pad: str, unk: str) -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {word: index for index, word in
             enumerate(specials + sorted(set(_WORDS)) + list("?.,:'()0123456789"))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    marks = [token for token in specials if token in template + (pair or "")]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=template, pair=pair, special_tokens=[(token, vocab[token]) for token in marks])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=max_length,
                                   pad_token=pad, unk_token=unk)


def save_tiny_extractor(folder: Path, max_length: int = 64) -> None:
    """``max_length``: the tokens the model and its tokenizer take (64 keeps the tests
    fast; 512, RoBERTa-base's size, shows the extractor's own limit at work)."""
    import torch
    from transformers import BertConfig, BertForQuestionAnswering

    tokenizer = _word_level_tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"],
                                      "[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1",
                                      max_length, pad="[PAD]", unk="[UNK]")
    torch.manual_seed(0)
    model = BertForQuestionAnswering(BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=max_length))
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)


def save_tiny_rewriter(folder: Path, max_length: int = 128) -> None:
    """``max_length``: the tokens its tokenizer takes in (flan-t5's is 512)."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = _word_level_tokenizer(["</s>", "<pad>", "<unk>"], "$A </s>", None, max_length,
                                      pad="<pad>", unk="<unk>")
    tokenizer.eos_token = "</s>"
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_layers=2,
                      num_heads=2, pad_token_id=1, eos_token_id=0)
    config.decoder_start_token_id = 1
    model = T5ForConditionalGeneration(config)
    # Random weights rarely say "</s>", and decoding the full budget would make the test
    # slow: a zero final norm makes every logit equal, so greedy decoding picks id 0,
    # the end of sequence, at once; the whole generate path still runs.
    with torch.no_grad():
        model.decoder.final_layer_norm.weight.zero_()
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
