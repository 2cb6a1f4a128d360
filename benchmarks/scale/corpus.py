"""A deterministic synthetic multi-hop corpus of any size, and two-hop questions over it.

Each document is a person: its title is the person's name, its 2-4 sentences name a
birthplace, an organisation, places and other documents' titles (a colleague, a
subject). Places and organisations are shared across documents with a long-tailed
(Zipf) document frequency, so a few are named by thousands of documents and most by a
handful: the extractive method's bridges (entities named by 2..tau documents) and its
title links both exist at every size, in the proportions a real corpus has.

Everything about document ``i`` comes from a random generator seeded by (seed, i), so
any document's facts can be recomputed without the corpus in memory: the questions
are built from them, and the corpus streams to its file one line at a time.

    .venv/bin/python benchmarks/scale/corpus.py --size 1000 [--out DIR]
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

SEED = 20261130
# Exponent of the Zipf law of entity document frequency (1 is the classic law; real
# entity frequencies in Wikipedia-like corpora sit slightly above it).
ZIPF_S = 1.1

# Invented names, so that nothing collides with the NLP model's knowledge and every
# name is unique by construction (see ``person``).
GIVEN = ("Arvel", "Mira", "Tobin", "Sela", "Corwin", "Ilse", "Dorian", "Fenna", "Jorund",
         "Lisbet", "Marek", "Noor", "Osric", "Petra", "Quill", "Rhosyn", "Soren", "Talia",
         "Ulric", "Vesna", "Wendel", "Ysolde", "Anselm", "Brida", "Casimir", "Delphine",
         "Emrys", "Freya", "Gideon", "Hester", "Ivo", "Jessamy", "Kaspar", "Leocadia",
         "Matthias", "Nerys", "Oswin", "Perpetua", "Rainer", "Sabine", "Thaddeus", "Ulla",
         "Valentin", "Wilhelmina", "Xander", "Yrsa", "Zeno", "Agathe")
FAMILY_SYLLABLES = ("tor", "quist", "sal", "dane", "mer", "vik", "hol", "brand", "ost",
                    "rend", "kav", "lund", "ber", "gard", "wyn", "dell", "mar", "ton",
                    "fal", "crest", "rok", "sen", "thal", "wick", "bro", "din", "hal",
                    "stead", "var", "ling", "cor", "ley")
PLACE_SYLLABLES = ("kel", "vane", "ord", "ell", "ath", "mire", "sun", "dra", "bel",
                   "haven", "gal", "ros", "tir", "eth", "nor", "wald", "fen", "ara",
                   "lis", "mont", "cael", "dun", "ivy", "orn")
PLACE_FORMS = ("Port {}", "{} Falls", "Lake {}", "North {}", "{}ford", "{} Bay")
ORG_FORMS = ("the {} Institute", "the {} Company", "{} University", "the {} Observatory",
             "the {} Trust", "{} College")
ROLES = ("chemist", "painter", "engineer", "historian", "architect", "botanist",
         "composer", "surveyor", "physician", "cartographer", "linguist", "astronomer")
SUBJECTS = ("river trade", "glass making", "tidal mills", "old maps", "folk songs",
            "railway bridges", "salt marshes", "printing presses", "winter crops",
            "clock towers", "harbour law", "mountain roads")


def _word(k: int, syllables: tuple[str, ...], at_least: int) -> str:
    """``k`` written in base len(syllables), at least ``at_least`` syllables: a bijection
    from integers to words, so distinct ``k`` are distinct words."""
    parts = []
    for _ in range(at_least):
        k, digit = divmod(k, len(syllables))
        parts.append(syllables[digit])
    while k:
        k, digit = divmod(k, len(syllables))
        parts.append(syllables[digit])
    return "".join(parts).capitalize()


# Names are spread over this many slots, documents placed by a multiplicative bijection
# so that neighbouring documents do not share a family name.
_NAME_SLOTS = len(GIVEN) * len(FAMILY_SYLLABLES) ** 3
_SCATTER = 7_919  # a prime; coprime with _NAME_SLOTS (which has only factors 2 and 3)


def person(i: int) -> str:
    """The title of document ``i``: unique for every ``i`` below ``_NAME_SLOTS`` (1.5 M)."""
    slot = (i * _SCATTER + 12_345) % _NAME_SLOTS
    given, family = divmod(slot, len(FAMILY_SYLLABLES) ** 3)
    return f"{GIVEN[given]} {_word(family, FAMILY_SYLLABLES, 2)}"


_PLACE_WORDS = len(PLACE_SYLLABLES) ** 3


def _place_word(k: int) -> str:
    # Scattered like the names, so that entities of neighbouring rank look unalike.
    return _word((k * _SCATTER + 101) % _PLACE_WORDS, PLACE_SYLLABLES, 2)


def place(k: int) -> str:
    """Place ``k`` (unique below 6 x 24^3 = 82,944, enough for 660,000 documents)."""
    return PLACE_FORMS[k % len(PLACE_FORMS)].format(_place_word(k // len(PLACE_FORMS)))


def organisation(k: int) -> str:
    return ORG_FORMS[k % len(ORG_FORMS)].format(_place_word(k // len(ORG_FORMS) + 7))


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


class Zipf:
    """Ranks 0..n-1 drawn with probability proportional to 1 / (rank + 1) ** s."""

    def __init__(self, n: int, s: float = ZIPF_S) -> None:
        self._cumulative = list(accumulate(1.0 / (rank + 1) ** s for rank in range(n)))

    def draw(self, rng: random.Random) -> int:
        return bisect.bisect(self._cumulative, rng.random() * self._cumulative[-1])


@dataclass(frozen=True, slots=True)
class Facts:
    """What document ``i`` says; recomputed from (seed, size, i) alone."""

    i: int
    title: str
    role: str
    born_in: str
    year: int
    org: str
    worked_in: str
    colleague: int
    cited: int | None
    subject: str
    visited: str | None


class Corpus:
    """The corpus of ``size`` documents: its facts, texts and questions."""

    def __init__(self, size: int, seed: int = SEED) -> None:
        if size < 10:
            raise ValueError(f"the corpus needs at least 10 documents, got {size}")
        self.size = size
        self.seed = seed
        # About 1 place and 1 organisation per 8 documents: the head of the law is named
        # by thousands of documents, the tail by one or two.
        self._places = Zipf(max(16, size // 8))
        self._orgs = Zipf(max(16, size // 8))

    def _rng(self, i: int) -> random.Random:
        return random.Random(self.seed * 1_000_003 + i)

    def _other(self, rng: random.Random, i: int) -> int:
        j = rng.randrange(self.size - 1)
        return j if j < i else j + 1

    def facts(self, i: int) -> Facts:
        rng = self._rng(i)
        with_citation = rng.random() < 0.6
        with_visit = rng.random() < 0.5
        return Facts(
            i=i, title=person(i), role=rng.choice(ROLES),
            born_in=place(self._places.draw(rng)), year=rng.randrange(1820, 1960),
            org=organisation(self._orgs.draw(rng)),
            worked_in=place(self._places.draw(rng)), colleague=self._other(rng, i),
            cited=self._other(rng, i) if with_citation else None,
            subject=rng.choice(SUBJECTS),
            visited=place(self._places.draw(rng)) if with_visit else None)

    def text(self, facts: Facts) -> str:
        """2-4 sentences, 40-80 words: the birthplace and role, the colleague at the
        organisation (the bridge a question crosses), and optionally a cited document
        and a visited place."""
        title = facts.title
        sentences = [
            f"{title} was {_article(facts.role)} {facts.role} born in {facts.born_in} in "
            f"{facts.year}, who grew up there and later became known for work on {facts.subject}.",
            f"In {facts.year + 24}, {title} joined {facts.org} in {facts.worked_in}, where "
            f"{title} worked alongside {person(facts.colleague)} for many years.",
        ]
        if facts.cited is not None:
            sentences.append(f"A later study by {title} drew on the notes of "
                             f"{person(facts.cited)} about {facts.subject}.")
        if facts.visited is not None:
            sentences.append(f"Before retiring, {title} travelled to {facts.visited} "
                             f"and wrote a short account of the journey.")
        return " ".join(sentences)

    def records(self) -> Iterator[dict[str, str]]:
        """The documents as ingest records (title and text; the id is the title's, as
        for any record that brings none)."""
        for i in range(self.size):
            facts = self.facts(i)
            yield {"title": facts.title, "text": self.text(facts)}

    def questions(self, count: int) -> list[dict[str, Any]]:
        """Two-hop questions: from a document to its colleague's document (the bridge
        title), whose birthplace is the answer; both documents support it."""
        rng = random.Random(self.seed - 1)
        picked = rng.sample(range(self.size), min(count, self.size))
        questions = []
        for i in picked:
            facts = self.facts(i)
            bridge = self.facts(facts.colleague)
            questions.append({
                "question": f"Where was the person who worked alongside {facts.title} at "
                            f"{facts.org} born?",
                "answer": bridge.born_in,
                "supporting_titles": [facts.title, bridge.title]})
        return questions

    def write(self, folder: Path, questions: int = 50) -> tuple[Path, Path]:
        """Stream the corpus to ``corpus-SIZE.jsonl`` and the questions to
        ``questions-SIZE.json`` in ``folder``; returns both paths."""
        folder.mkdir(parents=True, exist_ok=True)
        corpus = folder / f"corpus-{self.size}.jsonl"
        partial = corpus.with_suffix(".partial")
        with partial.open("w", encoding="utf-8") as fh:
            for record in self.records():
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        partial.replace(corpus)
        questions_path = folder / f"questions-{self.size}.json"
        questions_path.write_text(json.dumps(self.questions(questions), indent=1))
        return corpus, questions_path


def describe(path: Path) -> dict[str, float]:
    """Documents, words per document and bytes of a written corpus file."""
    documents = words = 0
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            documents += 1
            words += len(json.loads(line)["text"].split())
    return {"documents": documents, "words_per_document": round(words / documents, 1),
            "bytes": path.stat().st_size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[1] / "out" / "scale")
    args = parser.parse_args()
    started = time.perf_counter()
    corpus, questions = Corpus(args.size).write(args.out)
    print(f"wrote {corpus} and {questions} in {time.perf_counter() - started:.1f} s: "
          f"{describe(corpus)}")


if __name__ == "__main__":
    main()
