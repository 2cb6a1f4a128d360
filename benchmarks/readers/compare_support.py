"""readers_compare.py's scoring and library facts: how much of the source text a
parser's output keeps (words in order, headings, boilerplate leaked) and what each
library is (licence, the distributions it pulls in, which of them hold native code).

Apart from the script because these read only text and installed metadata, never a
parser or a generated file: they can be checked on their own, and the script keeps
to generating the files, timing the parsers in children and printing the tables.
Imported as ``compare_support`` with benchmarks/readers/ on ``sys.path`` (as the
benchmarks import ``common``). Standard library and ``packaging`` only.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher
from importlib import metadata

# --- text-quality scoring -----------------------------------------------------------


def words(text: str) -> list[str]:
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())


def recall_in_order(source: Sequence[list[str]], output: list[str]) -> float:
    """The share of ``source``'s words (one list per section) found in order in
    ``output``; a section less than half found counts as lost."""
    position = found = total = 0
    for section in source:
        total += len(section)
        window = output[position:position + 2 * len(section) + 200]
        blocks = [block for block in SequenceMatcher(None, section, window, autojunk=False)
                  .get_matching_blocks() if block.size]
        matched = sum(block.size for block in blocks)
        if blocks and matched * 2 >= len(section):
            found += matched
            position += blocks[-1].b + blocks[-1].size
    return found / total if total else 0.0


def headings_kept(titles: Sequence[str], found: Sequence[str]) -> float:
    """The share of ``titles`` that are verbatim among the headings ``found``, once
    their markdown backslash escapes are undone (as a reader of markdown would)."""
    wanted = Counter(titles)
    have = Counter(re.sub(r"\\([\\`*_{}\[\]()#+\-.!<>|~])", r"\1", h) for h in found)
    return sum((wanted & have).values()) / sum(wanted.values())


def boilerplate_leaked(boilerplate: Sequence[str], source_text: str, output: str) -> float:
    """The share of the boilerplate's words, in phrases the source text lacks, found
    (as whole phrases) in ``output``."""
    source, text = " ".join(words(source_text)), f" {' '.join(words(output))} "
    phrases = [" ".join(words(p)) for p in boilerplate]
    phrases = [p for p in phrases if f" {p} " not in f" {source} "]
    leaked = sum(len(p.split()) for p in phrases if f" {p} " in text)
    return leaked / sum(len(p.split()) for p in phrases)


# --- library metadata ---------------------------------------------------------------


def licence(distribution: str) -> str:
    info = metadata.metadata(distribution)
    classifiers = [c.rsplit("::", 1)[-1].strip() for c in info.get_all("Classifier") or []
                   if c.startswith("License ::")]
    # A short License field names the licence; a long one is its whole text.
    short = [str(info[field]) for field in ("License-Expression", "License")
             if field in info and len(str(info[field])) < 60]
    return (short or [", ".join(classifiers).replace(" License", "") or "?"])[0]


def dependencies(requirement: str) -> set[str]:
    """The installed distributions ``requirement`` pulls in, itself included."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [Requirement(requirement)]
    while todo:
        wanted = todo.pop()
        name = wanted.name.lower().replace("_", "-")
        try:
            requires = [] if name in seen else metadata.requires(name) or []
        except metadata.PackageNotFoundError:  # an optional one, not installed
            continue
        seen.add(name)
        todo += [needed for needed in map(Requirement, requires)
                 if needed.marker is None or any(needed.marker.evaluate({"extra": extra})
                                                 for extra in wanted.extras or {""})]
    return seen


def native_code(requirement: str) -> str:
    """Which of the distributions it pulls in hold compiled code (shared libraries)."""
    from packaging.requirements import Requirement

    binary = sorted(name for name in dependencies(requirement)
                    if any(f.suffix == ".so" or ".so." in f.name
                           for f in metadata.files(name) or []))
    own = Requirement(requirement).name.lower()
    return ", ".join(f"**{n}**" if n == own else n for n in binary) or "none"


def library_info(fmt: str, library: str) -> dict[str, str]:
    requirement = f"markitdown[{fmt}]" if library == "markitdown" and fmt != "html" else library
    return {"version": metadata.version(library), "licence": licence(library),
            "native": native_code(requirement),
            "deps": str(len(dependencies(requirement)) - 1)}
