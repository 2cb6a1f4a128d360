"""CompactRAG's answer extractor and sub-question rewriter: the model-free rules, and the
local-model versions over tiny random-weight models built and saved in the test."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hopindex.core.errors import ConfigError
from hopindex.methods.compactrag.modules import (
    EXTRACTOR_VARIABLE,
    NO_ANSWER,
    REWRITER_VARIABLE,
    ExtractedAnswer,
    HfRewriter,
    HfSpanExtractor,
    QaContext,
    SubstitutionRewriter,
    TopAnswerExtractor,
    join_contexts,
    open_modules,
    rewrite_prompt,
)
from tests.methods.compactrag.tiny_models import EINSTEIN

# --- TopAnswerExtractor --------------------------------------------------------------


def test_top_extractor_takes_the_best_scored_answer() -> None:
    """The answer of the highest-scored unit is the span, with that unit's score and
    position, whatever order the units come in."""
    shuffled = [EINSTEIN[1], EINSTEIN[0], EINSTEIN[2]]
    assert TopAnswerExtractor().extract_answer("Where was he born?", shuffled) == (
        ExtractedAnswer(text="Ulm, Germany", score=0.9, source_index=1))


def test_top_extractor_ties_keep_rank_and_blank_answers_are_skipped() -> None:
    """Equal scores go to the earlier unit; a unit with a blank answer is never chosen;
    the chosen answer is stripped."""
    contexts = [QaContext("q0", "   ", 5.0), QaContext("q1", " first ", 1.0),
                QaContext("q2", "second", 1.0)]
    assert TopAnswerExtractor().extract_answer("q", contexts) == (
        ExtractedAnswer(text="first", score=1.0, source_index=1))


def test_top_extractor_with_nothing_answers_nothing() -> None:
    """No contexts, or only blank answers, give the empty answer with no source."""
    assert TopAnswerExtractor().extract_answer("q", []) == NO_ANSWER
    assert TopAnswerExtractor().extract_answer("q", [QaContext("q", "", 1.0)]) == NO_ANSWER
    assert NO_ANSWER.text == "" and NO_ANSWER.source_index is None


# --- SubstitutionRewriter ------------------------------------------------------------


@pytest.mark.parametrize(("question", "answer", "expected"), [
    ("Where was #1 born?", "Albert Einstein", "Where was Albert Einstein born?"),
    ("Who directed [ans]?", "Jaap Speyer", "Who directed Jaap Speyer?"),
    ("When was <ref> founded?", "Acme", "When was Acme founded?"),
    ("Who is the spouse of {answer_1}?", "Pierre", "Who is the spouse of Pierre?"),
    ("Which country is [Answer to Q1] in?", "Paris", "Which country is Paris in?"),
    ("Is it in <A1>?", "Ulm", "Is it in Ulm?"),
    ("What is #1's capital?", "France", "What is France's capital?"),
    # Every placeholder is filled, even where a pronoun is also present.
    ("Did #1 meet [entity] before he died?", "Bohr", "Did Bohr meet Bohr before he died?"),
])
def test_placeholders_are_replaced(question: str, answer: str, expected: str) -> None:
    """Decomposition placeholders ('#1', bracketed ans/answer/ref/entity/A<n> markers)
    are each replaced by the referenced answer."""
    assert SubstitutionRewriter().rewrite_question(question, answer, None) == expected


@pytest.mark.parametrize(("question", "answer", "expected"), [
    ("Where was he born?", "Albert Einstein", "Where was Albert Einstein born?"),
    ("When did she die?", "Marie Curie", "When did Marie Curie die?"),
    ("When was it founded?", "Acme", "When was Acme founded?"),
    ("When did they form?", "The Beatles", "When did The Beatles form?"),
    ("Who taught him?", "Mozart", "Who taught Mozart?"),
    ("When was this founded?", "Acme", "When was Acme founded?"),
    ("Who directed that?", "Lilli", "Who directed Lilli?"),
    ("What is his nationality?", "Jaap Speyer", "What is Jaap Speyer's nationality?"),
    ("What is its capital?", "France", "What is France's capital?"),
    ("Where is their headquarters?", "Acme", "Where is Acme's headquarters?"),
    ("Who was her husband?", "Marie Curie", "Who was Marie Curie's husband?"),
    ("Who married her?", "Marie Curie", "Who married Marie Curie?"),
    ("Who gave her the award?", "Marie Curie", "Who gave Marie Curie the award?"),
    ("Where was this person born?", "Albert Einstein", "Where was Albert Einstein born?"),
    ("Who directed that film?", "Lilli", "Who directed Lilli?"),
    ("What country is the same city in?", "Paris", "What country is Paris in?"),
    ("Who produced the aforementioned album?", "Abbey Road", "Who produced Abbey Road?"),
    # "this" before a noun outside the list is a determiner left in place.
    ("When was this cathedral built?", "Notre-Dame", "When was Notre-Dame cathedral built?"),
    # At the start of a sentence a capitalised pronoun is still a reference.
    ("He was born where?", "Albert Einstein", "Albert Einstein was born where?"),
    ("Paris is nice. It lies where?", "Paris, France", "Paris is nice. Paris, France lies where?"),
])
def test_references_are_replaced(question: str, answer: str, expected: str) -> None:
    """Pronouns, demonstratives and 'that' closing a clause become the answer,
    possessives become '<answer>'s', and 'her' is told apart by the word after it."""
    assert SubstitutionRewriter().rewrite_question(question, answer, None) == expected


def test_only_the_leftmost_reference_is_replaced() -> None:
    """One sub-question needs the entity once: the leftmost reference is replaced and a
    later one is left as written."""
    assert SubstitutionRewriter().rewrite_question(
        "When did he meet his wife?", "Albert Einstein", None) == (
        "When did Albert Einstein meet his wife?")


def test_relative_that_and_capitalised_titles_are_not_references() -> None:
    """A relative 'that' (followed by more of its clause) and a capitalised word inside a
    sentence (a title) are not replaced; the next real reference is, if any."""
    rewrite = SubstitutionRewriter().rewrite_question
    assert rewrite("Where is the river that flows through it?", "Paris", None) == (
        "Where is the river that flows through Paris?")
    assert rewrite("Who wrote It Happened One Night?", "Frank Capra", None) == (
        "Who wrote It Happened One Night? (Frank Capra)")


def test_without_a_reference_the_answer_is_appended() -> None:
    """A question with no placeholder and no reference gets ' (<answer>)' appended, so the
    entity still reaches retrieval."""
    assert SubstitutionRewriter().rewrite_question(
        "Where was the director born? ", "Jaap Speyer", None) == (
        "Where was the director born? (Jaap Speyer)")


def test_already_grounded_questions_and_missing_answers_are_unchanged() -> None:
    """An answer already in the question (any case), no answer, a blank answer or a
    blank question leave the question exactly as given."""
    rewrite = SubstitutionRewriter().rewrite_question
    assert rewrite("Where was albert einstein born?", "Albert Einstein", None) == (
        "Where was albert einstein born?")
    assert rewrite("Where was he born?", None, "Who wrote it?") == "Where was he born?"
    assert rewrite("Where was #1 born?", "  \n", None) == "Where was #1 born?"
    assert rewrite("  ", "Albert Einstein", None) == "  "


def test_answer_whitespace_is_collapsed_and_referenced_question_is_ignored() -> None:
    """The answer is inserted with its whitespace collapsed; the referenced question does
    not change the rule-based rewrite."""
    rewrite = SubstitutionRewriter().rewrite_question
    assert rewrite("Where was he born?", " Albert\n  Einstein ", "Who wrote it?") == (
        rewrite("Where was he born?", "Albert Einstein", None)) == (
        "Where was Albert Einstein born?")


# --- Shared parts and the factory -----------------------------------------------------


def test_join_contexts_marks_each_units_block() -> None:
    """The extractor's context holds 'question\\nanswer' per unit, units a blank line
    apart (the authors' layout), and the offsets returned cut each unit's block out."""
    text, spans = join_contexts(EINSTEIN)
    assert text.split("\n\n")[0] == "Where was Albert Einstein born?\nUlm, Germany"
    assert [text[start:end] for start, end in spans] == text.split("\n\n")


def test_rewrite_prompt_is_the_authors_layout() -> None:
    """The rewriter's input is 'Q: <sub-question> | prev_answer: <answer>', whitespace
    collapsed, as the authors' rewriter is trained on."""
    assert rewrite_prompt("Where was  he\nborn?", " Albert Einstein ") == (
        "Q: Where was he born? | prev_answer: Albert Einstein")


def test_open_modules_defaults_to_the_model_free_modules() -> None:
    """Empty (or blank) paths give the model-free extractor and rewriter."""
    extractor, rewriter = open_modules("", " ")
    assert isinstance(extractor, TopAnswerExtractor)
    assert isinstance(rewriter, SubstitutionRewriter)


@pytest.mark.parametrize(("opener", "variable"), [
    (HfSpanExtractor, EXTRACTOR_VARIABLE), (HfRewriter, REWRITER_VARIABLE)])
def test_missing_or_invalid_folders_name_the_setting_and_path(
        tmp_path: Path, opener: Callable[[str], Any], variable: str) -> None:
    """A path that is no folder, an empty folder or a folder with a broken config is a
    ConfigError naming the environment variable and the path."""
    missing = tmp_path / "missing"
    with pytest.raises(ConfigError, match=f"{variable}.*{missing.name}"):
        opener(str(missing))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=f"{variable}.*{empty.name}"):
        opener(str(empty))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match=f"{variable}.*{broken.name}"):
        opener(str(broken))


def test_importing_the_modules_does_not_import_torch_or_transformers() -> None:
    """transformers and torch are imported only when a local model is opened, so the
    model-free path stays cheap to import."""
    code = ("import sys, hopindex.methods.compactrag.modules as m; "
            "m.SubstitutionRewriter().rewrite_question('Where was he born?', 'X', None); "
            "print(sorted({'torch', 'transformers'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, timeout=120)
    assert result.stdout.strip() == "[]"


# --- Local models (tiny, random weights, built offline) -------------------------------

# The tiny tokenizers know the words of the test texts (the rest read as unknown).
def test_span_extractor_returns_a_span_of_one_unit(tiny_models: tuple[Path, Path]) -> None:
    """The QA model's answer is a non-empty substring of the unit it names (never running
    into the next unit), with a probability-like score."""
    extractor = HfSpanExtractor(str(tiny_models[0]))
    result = extractor.extract_answer("Where was Albert Einstein born?", EINSTEIN)
    assert result.source_index is not None and 0 <= result.source_index < len(EINSTEIN)
    unit = EINSTEIN[result.source_index]
    assert result.text and result.text in f"{unit.question} {unit.answer}"
    assert 0.0 < result.score <= 1.0


def test_span_extractor_reads_long_contexts_and_questions_in_windows(
        tiny_models: tuple[Path, Path]) -> None:
    """Contexts far beyond the model's 64 tokens, and a question longer than half of
    them, still give a span from one of the units."""
    contexts = [QaContext(f"Who directed Lilli's Marriage {index}?", f"Jaap Speyer {index}",
                          1.0) for index in range(10)]
    extractor = HfSpanExtractor(str(tiny_models[0]))
    for question, given in [("Who directed it?", contexts),
                            ("Where was Albert Einstein born " * 10, EINSTEIN)]:
        result = extractor.extract_answer(question, given)
        assert result.source_index is not None
        unit = given[result.source_index]
        assert result.text and result.text in f"{unit.question} {unit.answer}"


def test_span_extractor_without_contexts_answers_nothing(
        tiny_models: tuple[Path, Path]) -> None:
    """No retrieved units: the empty answer, without running the model."""
    assert HfSpanExtractor(str(tiny_models[0])).extract_answer("q", []) == NO_ANSWER


def test_models_load_once_per_path_across_threads(
        tiny_models: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening the same folder from several threads and again later loads its model once;
    another folder loads its own."""
    import transformers

    loads: list[str] = []
    original = transformers.AutoModelForQuestionAnswering.from_pretrained

    def counting(location: str, **kwargs: Any) -> Any:
        loads.append(location)
        assert kwargs.get("local_files_only") is True
        return original(location, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForQuestionAnswering, "from_pretrained",
                        counting)
    fresh = tmp_path / "fresh"
    shutil.copytree(tiny_models[0], fresh)
    opened: list[HfSpanExtractor] = []
    threads = [threading.Thread(target=lambda: opened.append(HfSpanExtractor(str(fresh))))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    opened.append(HfSpanExtractor(str(fresh) + "/"))
    assert len(opened) == 5
    assert loads == [str(fresh.resolve())]
    other = tmp_path / "other"
    shutil.copytree(tiny_models[0], other)
    HfSpanExtractor(str(other))
    assert loads == [str(fresh.resolve()), str(other.resolve())]


def test_rewriter_runs_the_model_and_returns_a_string(
        tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewrite runs the seq2seq model on the prompt, which yields a string, and the
    rewrite is a non-empty string."""
    rewriter = HfRewriter(str(tiny_models[1]))
    generated: list[object] = []
    real = rewriter.generate_rewrite

    def recording(prompt: str) -> str:
        generated.append(real(prompt))
        return str(generated[-1])

    monkeypatch.setattr(rewriter, "generate_rewrite", recording)
    rewritten = rewriter.rewrite_question("Where was he born?", "Albert Einstein",
                                          "Who wrote it?")
    assert len(generated) == 1 and isinstance(generated[0], str)
    assert isinstance(rewritten, str) and rewritten


def test_rewriter_keeps_grounded_rewrites_and_falls_back_otherwise(
        tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A generated rewrite naming the answer is returned; a blank one or one that drops
    the answer gives the substitution rule's result; no answer skips the model."""
    rewriter = HfRewriter(str(tiny_models[1]))
    replies = iter(["Where was Albert Einstein born?", "", "Where was he born?"])
    prompts: list[str] = []

    def scripted(prompt: str) -> str:
        prompts.append(prompt)
        return next(replies)

    monkeypatch.setattr(rewriter, "generate_rewrite", scripted)
    assert rewriter.rewrite_question("Where was he born?", "Albert Einstein", None) == (
        "Where was Albert Einstein born?")
    assert rewriter.rewrite_question("Where was he born?", "Albert Einstein", None) == (
        "Where was Albert Einstein born?")
    assert rewriter.rewrite_question("Who directed it?", "Lilli", None) == (
        "Who directed Lilli?")
    assert len(prompts) == 3
    assert rewriter.rewrite_question("Where was he born?", None, None) == "Where was he born?"
    assert len(prompts) == 3


def test_open_modules_opens_local_models(tiny_models: tuple[Path, Path]) -> None:
    """Non-empty paths open the local-model extractor and rewriter."""
    extractor, rewriter = open_modules(str(tiny_models[0]), str(tiny_models[1]))
    assert isinstance(extractor, HfSpanExtractor)
    assert isinstance(rewriter, HfRewriter)
