"""``sentences``: a small third-party index method, one phase of each kind.

- ``sentences`` (documents): one passage unit per sentence; touches, in the
  ``words`` namespace, the first word of each sentence that starts with a capital
  and every word group that cited the document before.
- ``words`` (groups): per word, one unit joining the index's sentences that start
  with it (at most ``max_group_size``, in document and sentence order).
- ``tree`` (levels): level 0 pairs the index's documents (sorted ids, chunks of
  two) into nodes joining their first sentences; level 1 is one root over the
  level-0 nodes; level 2 is empty.

``lazy_sentences`` is the same method with its tree built only on request
(``Rebuild.ON_REQUEST``): jobs that change documents leave it stale, a rebuild job
builds it again, and so does a job after which the share of documents changed since
the last build reaches ``HOPINDEX_LAZY_SENTENCES_REBUILD_SHARE`` (0: never).

Sentences are split on ". ", nothing cleverer: the method exists to exercise the
runtime, not to index well. Every read goes through the state store, as a plugin
outside this repository would have to.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import ConfigError
from hopindex.core.ids import unit_id
from hopindex.core.models import Document, ItemError, Unit, UnitKind
from hopindex.methods.plugin import (
    DocumentsPhase,
    DocumentsResult,
    Forgotten,
    GroupsPhase,
    GroupsResult,
    LevelsPhase,
    LlmUse,
    Phase,
    PhaseContext,
    Rebuild,
    Scope,
)

METHOD = "sentences"
LAZY_METHOD = "lazy_sentences"
WORDS = "words"
TREE = "tree"
PAIR_PREFIX = "pair:"
ROOT = "root"
# Seconds each batch of every phase sleeps before its work: lets a test SIGKILL a
# worker while it runs a phase. HOPINDEX_TEST_* variables are not settings.
SLOW_PHASE_VARIABLE = "HOPINDEX_TEST_SLOW_PHASE_S"
# Tree keys (comma-separated) whose build fails for good: a partial tree for a test.
FAIL_TREE_VARIABLE = "HOPINDEX_TEST_FAIL_TREE_KEYS"


@dataclass(frozen=True, slots=True)
class SentencesSettings:
    """``HOPINDEX_SENTENCES_MAX_GROUP_SIZE``: sentences one word unit joins at most."""

    max_group_size: int = 4

    def __post_init__(self) -> None:
        if self.max_group_size < 1:
            raise ConfigError("HOPINDEX_SENTENCES_MAX_GROUP_SIZE must be positive, "
                              f"got {self.max_group_size}")


@dataclass(frozen=True, slots=True)
class LazySentencesSettings:
    """``HOPINDEX_LAZY_SENTENCES_MAX_GROUP_SIZE`` as for ``sentences``;
    ``HOPINDEX_LAZY_SENTENCES_REBUILD_SHARE``: the share of documents changed since the
    tree's last build at which a job rebuilds it (0: only a rebuild job does)."""

    max_group_size: int = 4
    rebuild_share: float = 0.0

    def __post_init__(self) -> None:
        if self.max_group_size < 1:
            raise ConfigError("HOPINDEX_LAZY_SENTENCES_MAX_GROUP_SIZE must be positive, "
                              f"got {self.max_group_size}")
        if not 0.0 <= self.rebuild_share <= 1.0:
            raise ConfigError("HOPINDEX_LAZY_SENTENCES_REBUILD_SHARE must be between 0 and "
                              f"1, got {self.rebuild_share}")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, each ending with one full stop."""
    return [part.strip().rstrip(".") + "." for part in text.split(". ") if part.strip(" .")]


def first_word(sentence: str) -> str | None:
    """The sentence's first word when it starts with a capital letter: its group key."""
    word = sentence.split(maxsplit=1)[0].strip(".,;:") if sentence.strip() else ""
    return word if word[:1].isupper() else None


def _pause() -> None:
    seconds = float(os.environ.get(SLOW_PHASE_VARIABLE, "0") or 0)
    if seconds > 0:
        # The plugin simulating slow work: it widens the window in which a test kills a
        # worker mid-phase. Not a wait in a test; the tests wait on job progress.
        time.sleep(seconds)


def _unit(index: str, kind: UnitKind, source_key: str, text: str, sources: Sequence[str], *,
          level: int = 0, entities: tuple[str, ...] = (),
          metadata: dict[str, object] | None = None) -> Unit:
    return Unit(unit_id=unit_id(index, kind, source_key, text), index=index, kind=kind,
                text=text, source_doc_ids=tuple(sources), method=METHOD, source_key=source_key,
                entities=entities, level=level, metadata=dict(metadata or {}))


def passage_units(document: Document) -> list[Unit]:
    return [_unit(document.index, UnitKind.PASSAGE, f"{document.doc_id}#s{number}", sentence,
                  (document.doc_id,), metadata={"title": document.title, "sentence": number})
            for number, sentence in enumerate(split_sentences(document.text))]


def run_sentences(context: PhaseContext, documents: list[Document]) -> DocumentsResult:
    _pause()
    result = DocumentsResult()
    for document in documents:
        units = passage_units(document)
        result.units.extend(units)
        result.touch(WORDS, {w for u in units if (w := first_word(u.text)) is not None})
        # A changed document may no longer start a sentence with a word it used to:
        # that word's group must drop its sentence.
        result.touch(WORDS, context.state.groups_of_documents(context.index, WORDS,
                                                              [document.doc_id]))
    return result


def build_words(context: PhaseContext, words: list[str]) -> GroupsResult:
    _pause()
    state, index = context.state, context.index
    # Every passage of the index, read back from the state store: fine for the small
    # corpora this method is for.
    passages = state.units_of_documents(index, sorted(state.document_hashes(index)),
                                        kinds=(UnitKind.PASSAGE,))
    passages.sort(key=lambda u: (u.source_doc_ids[0], int(u.metadata["sentence"])))
    wanted = set(words)
    by_word: dict[str, list[Unit]] = defaultdict(list)
    for passage in passages:
        word = first_word(passage.text)
        if word in wanted:
            by_word[word].append(passage)
    limit: int = context.settings.max_group_size
    result = GroupsResult()
    for word in words:
        chosen = by_word.get(word, [])[:limit]
        if chosen:
            sources = sorted({d for u in chosen for d in u.source_doc_ids})
            result.built[word] = [_unit(index, UnitKind.PROPOSITION_AGGREGATE, f"word:{word}",
                                        " ".join(u.text for u in chosen), sources,
                                        entities=(word,))]
    return result


def _pairs(doc_ids: Sequence[str]) -> dict[str, list[str]]:
    ordered = sorted(doc_ids)
    chunks = [ordered[i:i + 2] for i in range(0, len(ordered), 2)]
    return {PAIR_PREFIX + "|".join(chunk): chunk for chunk in chunks}


def plan_tree(context: PhaseContext, level: int, scope: Scope) -> list[str]:
    state, index = context.state, context.index
    if level == 0:
        if not scope.doc_ids and not scope.deleted and context.phase not in scope.rebuild:
            return []  # nothing changed and no rebuild asked: the tree stands
        # Pairs that no longer exist are planned too: built as nothing, they are removed.
        existing = [k for k in state.list_group_keys(index, TREE) if k.startswith(PAIR_PREFIX)]
        return sorted(set(_pairs(list(state.document_hashes(index)))) | set(existing))
    if level == 1:
        return [ROOT] if state.list_group_keys(index, TREE) else []
    return []


def build_tree(context: PhaseContext, level: int, keys: list[str]) -> GroupsResult:
    _pause()
    failing = set(filter(None, os.environ.get(FAIL_TREE_VARIABLE, "").split(",")))
    result = _build_pairs(context, keys) if level == 0 else _build_root(context, keys)
    for key in sorted(failing & set(keys)):
        result.built.pop(key, None)
        result.errors.append(ItemError(item=key, stage=context.phase,
                                       reason=f"{FAIL_TREE_VARIABLE} names it"))
    return result


def _build_pairs(context: PhaseContext, keys: list[str]) -> GroupsResult:
    state, index = context.state, context.index
    pairs = _pairs(list(state.document_hashes(index)))
    needed = sorted({d for k in keys for d in pairs.get(k, [])})
    documents = {d.doc_id: d for d in state.get_documents(index, needed)}
    result = GroupsResult()
    for key in keys:
        members = pairs.get(key)
        if members is None:
            continue
        text = " ".join(split_sentences(documents[d].text)[0] for d in members)
        result.built[key] = [_unit(index, UnitKind.SUMMARY, f"tree:{key}", text, members,
                                   level=1)]
    return result


def _build_root(context: PhaseContext, keys: list[str]) -> GroupsResult:
    state, index = context.state, context.index
    pair_keys = [k for k in state.list_group_keys(index, TREE) if k.startswith(PAIR_PREFIX)]
    groups = state.get_groups(index, TREE, pair_keys)
    unit_ids = [u for k in pair_keys if k in groups for u in groups[k].unit_ids]
    by_id = {u.unit_id: u for u in state.get_units(index, unit_ids)}
    nodes = [by_id[u] for u in unit_ids if u in by_id]
    result = GroupsResult()
    if ROOT in keys and nodes:
        sources = sorted({d for u in nodes for d in u.source_doc_ids})
        result.built[ROOT] = [_unit(index, UnitKind.SUMMARY, f"tree:{ROOT}",
                                    " ".join(u.text for u in nodes), sources, level=2)]
    return result


class SentencesIndexMethod:
    name = METHOD
    llm_use = LlmUse.NONE
    settings_type: type[Any] = SentencesSettings  # as the protocol types it
    writes = frozenset({UnitKind.PASSAGE, UnitKind.PROPOSITION_AGGREGATE, UnitKind.SUMMARY})
    default_queries = ("sentences_naive",)
    phases: tuple[Phase, ...] = (
        DocumentsPhase(name="sentences", run=run_sentences,
                       writes=frozenset({UnitKind.PASSAGE})),
        GroupsPhase(name="words", namespace=WORDS, build=build_words,
                    writes=frozenset({UnitKind.PROPOSITION_AGGREGATE})),
        LevelsPhase(name="tree", namespace=TREE, plan=plan_tree, build=build_tree,
                    writes=frozenset({UnitKind.SUMMARY})),
    )

    def forget_documents(self, context: PhaseContext, doc_ids: Sequence[str]) -> Forgotten:
        return Forgotten(touched={WORDS: context.state.groups_of_documents(
            context.index, WORDS, doc_ids)})


def _rebuild_share(settings: LazySentencesSettings) -> float:
    return settings.rebuild_share


class LazySentencesIndexMethod(SentencesIndexMethod):
    """``sentences`` with its tree built on request (see the module docstring)."""

    name = LAZY_METHOD
    settings_type = LazySentencesSettings
    phases: tuple[Phase, ...] = (
        *SentencesIndexMethod.phases[:2],
        LevelsPhase(name="tree", namespace=TREE, plan=plan_tree, build=build_tree,
                    writes=frozenset({UnitKind.SUMMARY}), rebuild=Rebuild.ON_REQUEST,
                    rebuild_share=_rebuild_share),
    )
