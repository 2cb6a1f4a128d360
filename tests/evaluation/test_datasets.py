"""Dataset loaders: questions, answers and exact-string gold passages for each format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.evaluation.datasets import (
    DatasetFormat,
    Question,
    corpus_from_questions,
    load_questions,
)
from hopindex.readers import read_paths

HOTPOT = Path(__file__).resolve().parents[2] / "hopindex" / "sample" / "hotpotqa-100"


def passages_of(documents: Any) -> set[str]:
    return {f"{d.title}\n{d.text}" for d in documents}


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def musique_record(qid: str = "2hop__1_2", **overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": qid,
        "question": "Who founded the company that makes the Walkman?",
        "answer": "Masaru Ibuka",
        "answer_aliases": ["Ibuka", "Masaru Ibuka"],
        "answerable": True,
        "paragraphs": [
            {"idx": 0, "title": "Walkman", "paragraph_text": "The Walkman is made by Sony.",
             "is_supporting": True},
            {"idx": 1, "title": "Betamax", "paragraph_text": "Betamax was a tape format.",
             "is_supporting": False},
            {"idx": 2, "title": "Sony", "paragraph_text": "Sony was founded by Masaru Ibuka.",
             "is_supporting": True},
        ],
        "question_decomposition": [
            {"id": 1, "question": "Walkman >> manufacturer", "answer": "Sony",
             "paragraph_support_idx": 0},
            {"id": 2, "question": "who founded #1", "answer": "Masaru Ibuka",
             "paragraph_support_idx": 2},
        ],
    }
    record.update(overrides)
    return record


def twowiki_record() -> dict[str, Any]:
    return {
        "_id": "w1", "type": "comparison",
        "question": "Which film came out first, Alpha or Beta?", "answer": "Alpha",
        "context": [["Alpha", ["Alpha is a 1950 film.", "It is black and white."]],
                    ["Gamma", ["Gamma is unrelated."]],
                    ["Beta", ["Beta is a 1960 film."]]],
        "supporting_facts": [["Alpha", 0], ["Beta", 0], ["Alpha", 1]],
        "evidences": [["Alpha", "publication date", "1950"]],
    }


# --- HotpotQA, on the real shipped data -----------------------------------------------


def test_hotpotqa_100_questions_each_with_two_gold_passages_in_the_corpus() -> None:
    """Every one of the 100 HotpotQA questions has 2 gold passages, and each is an exact
    passage string of the shipped corpus.json as the readers read it."""
    questions = load_questions(HOTPOT / "questions.json")
    corpus = read_paths([HOTPOT / "corpus.json"])
    assert corpus.errors == []
    passages = passages_of(corpus.documents)
    assert len(questions) == 100
    for question in questions:
        assert len(question.gold_passages) == 2, question.qid
        assert set(question.gold_passages) <= passages, question.qid


def test_hotpotqa_fields_follow_the_record() -> None:
    """Question id, text, answer and kind come straight from the HotpotQA record; the gold
    passages are the supporting titles with sentences joined by ""."""
    raw = json.loads((HOTPOT / "questions.json").read_text(encoding="utf-8"))[0]
    question = load_questions(HOTPOT / "questions.json", DatasetFormat.HOTPOTQA)[0]
    context = dict(raw["context"])
    assert question == Question(
        qid=raw["_id"], question=raw["question"], answers=(raw["answer"],),
        gold_passages=tuple(f"{t}\n{''.join(context[t])}" for t in ("Alû", "Lilu (mythology)")),
        kind=raw["type"])
    assert {q.kind for q in load_questions(HOTPOT / "questions.json")} == {
        "bridge", "comparison"}


def test_hotpotqa_corpus_from_questions_covers_every_gold_passage() -> None:
    """The corpus built from the questions' own contexts is deduplicated by title and holds
    every gold passage exactly."""
    documents = corpus_from_questions(HOTPOT / "questions.json")
    titles = [d.title for d in documents]
    assert len(titles) == len(set(titles))
    assert all(d.doc_id is None for d in documents)
    passages = passages_of(documents)
    for question in load_questions(HOTPOT / "questions.json"):
        assert set(question.gold_passages) <= passages
    # These contexts are exactly the paragraphs the shipped corpus file holds.
    assert passages == passages_of(read_paths([HOTPOT / "corpus.json"]).documents)


# --- MuSiQue ----------------------------------------------------------------------------


def test_musique_gold_from_is_supporting_and_aliases(tmp_path: Path) -> None:
    """MuSiQue gold passages are the is_supporting paragraphs as title + "\\n" + paragraph_text;
    answers are the answer then its aliases, deduplicated; kind is the hop prefix of the id."""
    path = write(tmp_path / "musique.json", [musique_record()])
    (question,) = load_questions(path)
    assert question.qid == "2hop__1_2"
    assert question.answers == ("Masaru Ibuka", "Ibuka")
    assert question.gold_passages == ("Walkman\nThe Walkman is made by Sony.",
                                      "Sony\nSony was founded by Masaru Ibuka.")
    assert question.kind == "2hop"


def test_musique_jsonl_and_unanswerable_kind(tmp_path: Path) -> None:
    """The official MuSiQue JSON Lines files load too; unanswerable questions say so in kind."""
    path = tmp_path / "musique_full.jsonl"
    path.write_text(json.dumps(musique_record("3hop1__9_8_7")) + "\n\n"
                    + json.dumps(musique_record("2hop__5_6", answerable=False)) + "\n")
    questions = load_questions(path, "musique")
    assert [q.kind for q in questions] == ["3hop1", "2hop-unanswerable"]


def test_musique_corpus_keeps_distinct_paragraphs_sharing_a_title(tmp_path: Path) -> None:
    """MuSiQue paragraphs of one article share a title: each distinct text is kept, with ids
    title#n, so no gold passage is lost; identical paragraphs are kept once."""
    second = musique_record("2hop__3_4")
    second["paragraphs"] = [
        {"idx": 0, "title": "Sony", "paragraph_text": "Sony is based in Tokyo.",
         "is_supporting": True},
        {"idx": 1, "title": "Walkman", "paragraph_text": "The Walkman is made by Sony.",
         "is_supporting": False},
    ]
    path = write(tmp_path / "musique.json", [musique_record(), second])
    documents = corpus_from_questions(path, DatasetFormat.MUSIQUE)
    assert [(d.doc_id, d.title, d.text) for d in documents] == [
        (None, "Walkman", "The Walkman is made by Sony."),
        (None, "Betamax", "Betamax was a tape format."),
        ("Sony#1", "Sony", "Sony was founded by Masaru Ibuka."),
        ("Sony#2", "Sony", "Sony is based in Tokyo."),
    ]
    passages = passages_of(documents)
    for question in load_questions(path):
        assert set(question.gold_passages) <= passages


# --- 2WikiMultiHopQA ----------------------------------------------------------------------


def test_twowiki_gold_joins_sentences_with_a_space(tmp_path: Path) -> None:
    """2Wiki gold passages join sentences with " " (unlike HotpotQA), one per supporting title
    in order of first mention; AUTO detects 2Wiki from its `evidences` key."""
    path = write(tmp_path / "2wikimultihopqa.json", [twowiki_record()])
    (question,) = load_questions(path)
    assert question.gold_passages == ("Alpha\nAlpha is a 1950 film. It is black and white.",
                                      "Beta\nBeta is a 1960 film.")
    assert question.answers == ("Alpha",)
    assert question.kind == "comparison"
    corpus = corpus_from_questions(path)
    assert [(d.title, d.text) for d in corpus] == [
        ("Alpha", "Alpha is a 1950 film. It is black and white."),
        ("Gamma", "Gamma is unrelated."), ("Beta", "Beta is a 1960 film.")]


def test_auto_tells_hotpotqa_from_twowiki_by_sentence_spacing(tmp_path: Path) -> None:
    """Without `evidences` or `level`, leading-space sentences identify HotpotQA; with no
    such clue at all the loader refuses to guess, because the gold strings would differ."""
    record = twowiki_record()
    del record["evidences"]
    ambiguous = write(tmp_path / "a.json", [record])
    with pytest.raises(InvalidInputError, match="pass the format explicitly"):
        load_questions(ambiguous)
    # Told explicitly, the same file loads with the 2Wiki join.
    assert load_questions(ambiguous, DatasetFormat.TWOWIKI)[0].gold_passages[0] == (
        "Alpha\nAlpha is a 1950 film. It is black and white.")
    assert load_questions(ambiguous, DatasetFormat.HOTPOTQA)[0].gold_passages[0] == (
        "Alpha\nAlpha is a 1950 film.It is black and white.")
    record["context"][0][1] = ["Alpha is a 1950 film.", " It is black and white."]
    spaced = write(tmp_path / "b.json", [record])
    assert load_questions(spaced)[0].gold_passages[0] == (
        "Alpha\nAlpha is a 1950 film. It is black and white.")


def test_one_sentence_paragraphs_need_no_format_named(tmp_path: Path) -> None:
    """Questions written for one's own index, each gold paragraph one whole text: the two
    joins give the same gold strings, so AUTO loads them (it used to refuse to guess)."""
    record = {"id": "own-1", "question": "Who taught at the University of Paris?",
              "answer": "Pierre Curie",
              "context": [["University of Paris", ["The University of Paris was a university "
                                                   "in Paris. Pierre Curie taught there."]]],
              "supporting_facts": [["University of Paris", 0]]}
    (question,) = load_questions(write(tmp_path / "own.json", [record]))
    assert question.gold_passages == ("University of Paris\nThe University of Paris was a "
                                      "university in Paris. Pierre Curie taught there.",)


# --- errors ---------------------------------------------------------------------------------


def test_unknown_format_names_file_line_fields_and_an_example(tmp_path: Path) -> None:
    """A file whose records match no format raises InvalidInputError naming the file, the
    line and index of the record, the fields each format needs, and an example record;
    that example, written to a file of its own, loads."""
    path = tmp_path / "q.json"
    path.write_text('[\n  {"question": "x", "answer": "y"}\n]\n', encoding="utf-8")
    with pytest.raises(InvalidInputError) as caught:
        load_questions(path)
    assert caught.value.where == f"{path}:2[0]"
    message = str(caught.value)
    assert "unknown question format (keys: ['answer', 'question'])" in message
    assert '"supporting_facts": [[title, sentence_index], ...]' in message
    assert '"paragraphs": [{"title", "paragraph_text", "is_supporting"}, ...]' in message
    example = message.split("for example ", 1)[1].split(", or MuSiQue", 1)[0]
    (question,) = load_questions(write(tmp_path / "example.json", [json.loads(example)]))
    assert question.gold_passages == ("Marie Curie\nMarie Curie was born in Warsaw.",
                                      "Pierre Curie\nPierre Curie married Marie Curie.")


def test_record_missing_a_needed_field_names_its_line_and_index(tmp_path: Path) -> None:
    """A later record without `answer` raises naming the field, the record's line and
    index, and what a record of its format holds, with an example: in a JSON list
    written one record a line, and in JSON Lines (whose line counts blank ones)."""
    broken = musique_record("2hop__x")
    del broken["answer"]
    listed = tmp_path / "musique.json"
    listed.write_text("[" + json.dumps(musique_record()) + ",\n" + json.dumps(broken) + "]",
                      encoding="utf-8")
    with pytest.raises(InvalidInputError) as caught:
        load_questions(listed)
    assert caught.value.where == f"{listed}:2[1]"
    assert str(caught.value).startswith(f"{listed}:2[1]: missing field 'answer'; a MuSiQue "
                                        'record holds {"id", "question", "answer", ')
    assert 'for example {"id": "2hop__1_2"' in str(caught.value)
    lines = tmp_path / "musique.jsonl"
    lines.write_text(json.dumps(musique_record()) + "\n\n" + json.dumps(broken) + "\n",
                     encoding="utf-8")
    with pytest.raises(InvalidInputError) as caught:
        load_questions(lines)
    assert caught.value.where == f"{lines}:3"


def test_explicit_format_that_does_not_fit_names_the_missing_field(tmp_path: Path) -> None:
    """Forcing MuSiQue on a HotpotQA file fails on the first record's missing `paragraphs`."""
    with pytest.raises(InvalidInputError) as caught:
        load_questions(HOTPOT / "questions.json", DatasetFormat.MUSIQUE)
    assert caught.value.where == f"{HOTPOT / 'questions.json'}:2[0]"
    assert "missing field 'paragraphs'; a MuSiQue record holds" in str(caught.value)


def test_a_bad_field_deep_in_a_record_is_named_after_its_place(tmp_path: Path) -> None:
    """A context entry that is not [title, [sentences]] is named by file, line, index and
    field path, with the format's fields and example."""
    record = twowiki_record()
    record["context"][1] = ["Gamma", "not a list"]
    path = write(tmp_path / "w.json", [record])
    with pytest.raises(InvalidInputError) as caught:
        load_questions(path)
    assert caught.value.where == f"{path}:1[0]:context[1]"
    assert "expected [title, [sentence, ...]]; a 2WikiMultiHopQA record holds" in str(
        caught.value)


def test_supporting_title_absent_from_context_is_an_error(tmp_path: Path) -> None:
    """A supporting fact whose title is not in the context cannot yield a gold passage."""
    record = twowiki_record()
    record["supporting_facts"].append(["Nowhere", 0])
    path = write(tmp_path / "w.json", [record])
    with pytest.raises(InvalidInputError, match="'Nowhere' is not in the question's context"):
        load_questions(path)


def test_unreadable_inputs_raise_naming_the_file(tmp_path: Path) -> None:
    """A missing file, invalid JSON, a non-list top level and an unknown format name raise
    InvalidInputError with `where` set."""
    with pytest.raises(InvalidInputError) as missing:
        load_questions(tmp_path / "nope.json")
    assert missing.value.where == str(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(InvalidInputError, match="invalid JSON"):
        load_questions(bad)
    with pytest.raises(InvalidInputError, match="expected a JSON list"):
        load_questions(write(tmp_path / "obj.json", {"a": 1}))
    with pytest.raises(InvalidInputError, match="unknown dataset format"):
        load_questions(HOTPOT / "questions.json", "squad")
