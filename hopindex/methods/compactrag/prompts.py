"""CompactRAG's three prompts as ``ChatRequest`` builders: QA extraction (the offline
phase, one call per passage) and the query's two calls, decomposition and synthesis.

The wording is the paper's and its authors' code's, with the departures listed in
docs/methods.md. QA extraction (the paper's Appendix A) carries the passage's spaCy
entities and noun phrases as the authors' code does, and asks only for the QA pairs,
the one part that is indexed, not the atomic facts the authors discard. Decomposition
counts sub-questions from 1 and writes "no ref" as ``null``; synthesis shows each
sub-question as rewritten (the text it was retrieved with) and its extracted answer,
which the paper's input ``{Q, {q_i, a_i, P_i}}`` includes and the authors' code leaves
out, and does not echo the question back.

Layout matters beyond the model: readers of the prompt (the local test server
included) find the passage between the last ``[Original Text]:`` and the next
``[Entity List]:``, the question after the last ``Now, the multi-hop question is:``
and the evidence after the last ``Now, it is your turn.``: each follows an example
laid out the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.backends.llm.chat import ChatRequest, ResponseFormat
from hopindex.core.models import EntitySpan
from hopindex.methods.compactrag.parsing import QaPair
from hopindex.methods.compactrag.shapes import DecompositionReply, QaReply, SynthesisReply

QA = "compactrag.qa"  # the phase and step names: LLM usage is recorded per stage
DECOMPOSE = "compactrag.decompose"
SYNTHESIZE = "compactrag.synthesize"

MAX_NOUN_CHUNKS = 5  # the authors' prompt lists at most five noun phrases
# Departure (docs/methods.md): the query's two calls are bounded, so a rambling model
# cannot run up the bill; eight sub-questions or a paragraph of reasoning fit within.
DECOMPOSE_MAX_TOKENS = 512
SYNTHESIZE_MAX_TOKENS = 512

ORIGINAL_TEXT_LABEL = "[Original Text]:"
ENTITY_LIST_LABEL = "[Entity List]:"
NOUN_PHRASES_LABEL = "[Important Noun Phrases]:"
NO_ENTITIES = "No clear entities identified"
QA_SYSTEM = "You are a knowledge extraction and question generation system."
QA_INSTRUCTIONS = (
    "You will receive:\n"
    "1. Original passage text\n"
    "2. Entities and noun phrases extracted from the passage\n\n"
    "Your task is to generate atomic knowledge facts as question-answer pairs.\n\n"
    "Rules for the question-answer pairs:\n"
    "1. Each question must be short (at most 12 words) and start with a question word "
    "(Who, What, When, Where, Which, How, How many).\n"
    "2. Use explicit entity names from the entity list, in full; avoid pronouns or vague "
    "references.\n"
    "3. Each answer must be an exact verbatim substring of the original text.\n"
    "4. Each pair must state exactly one fact.\n"
    "5. Ensure coverage of all important entities and relationships.\n"
    "6. Avoid duplicate questions or answers.\n\n"
    'Reply with a JSON array of this shape: [{"question": "...", "answer": "..."}]\n'
    # JSON mode cannot return a bare array; parse_qa_pairs accepts this wrapper.
    'Where only a JSON object is allowed, reply {"qa": [...]} instead.'
)
QA_EXAMPLE_TEXT = (
    "Lilli's Marriage (German: Lillis Ehe) is a 1919 German silent film directed by Jaap "
    'Speyer. It is a sequel to the film "Lilli", and premiered at the Marmorhaus in Berlin. '
    "The film's art direction was by Hans Dreier.")
QA_EXAMPLE_ENTITIES = (
    ("Lilli's Marriage", "WORK_OF_ART"), ("Lillis Ehe", "WORK_OF_ART"),
    ("Jaap Speyer", "PERSON"), ("Lilli", "WORK_OF_ART"), ("Marmorhaus in Berlin", "FAC"),
    ("Hans Dreier", "PERSON"), ("1919", "DATE"))
QA_EXAMPLE_PAIRS = (
    QaPair("What is Lilli's Marriage?", "a 1919 German silent film"),
    QaPair("Who directed Lilli's Marriage?", "directed by Jaap Speyer"),
    QaPair("Which film is Lilli's Marriage a sequel to?", 'It is a sequel to the film "Lilli"'),
    QaPair("Where did Lilli's Marriage premiere?", "premiered at the Marmorhaus in Berlin"),
    QaPair("Who was responsible for the art direction of Lilli's Marriage?", "Hans Dreier"))
QA_CLOSING = "Return only valid JSON without any other text."

DECOMPOSE_SYSTEM = ("You are an AI assistant that helps break down multi-hop questions into "
                    "minimal necessary sub-questions.")
DECOMPOSE_INSTRUCTIONS = (
    "Please strictly follow these rules:\n\n"
    "## General Rules\n"
    "1. Only break down the question if it requires finding and connecting multiple "
    "distinct pieces of information.\n"
    "2. Each sub-question must target exactly one specific, essential piece of information.\n"
    "3. Avoid redundant or overlapping sub-questions.\n"
    "4. Ensure that every entity, event, or concept in the original question is represented "
    "in at least one sub-question.\n"
    "5. Each sub-question must be directly answerable and standalone clear.\n\n"
    "## Special Rules for Question Types\n"
    "- Impact/Significance questions: first ask what the thing/event was, then what its "
    "impact/significance was.\n"
    "- Comparison questions (A vs B): identify the specific attribute being compared; ask "
    "about that attribute for A; ask about that attribute for B; (if needed) add a final "
    "comparative sub-question.\n\n"
    "## Logical Structure\n"
    "- Parallel: independent sub-questions that can be answered without depending on others.\n"
    "- Sequential: sub-questions that build upon the answers of earlier ones.\n"
    "- Comparative: sub-questions that require connecting answers about two or more "
    "entities.\n\n"
    "## Dependency Rule\n"
    '- Each sub-question\'s "ref" must point to at most one earlier sub-question.\n'
    '- If the sub-question is independent, set "ref": null.\n'
    "- Do not reference multiple earlier sub-questions.\n\n"
    "## Output Format\n"
    "- Output strictly in JSON array format, without explanations or additional text.\n"
    "- Each item must be an object with three fields:\n"
    '  - "index": the index of the sub-question, counting from 1.\n'
    '  - "q": the sub-question text.\n'
    '  - "ref": the index of the sub-question it depends on (null if independent).\n'
    # JSON mode cannot return a bare array; parse_decomposition accepts this wrapper.
    '- Where only a JSON object is allowed, reply {"sub_questions": [...]} instead.\n\n'
    "## Example\n"
    "Input: \"In what year was the author of *The Insider's Guide to the Colleges* "
    'established?"\n\n'
    "Output:\n"
    "[\n"
    '  {"index": 1, "q": "Who is the author of \'The Insider\'s Guide to the Colleges\'?", '
    '"ref": null},\n'
    '  {"index": 2, "q": "In what year was this author established?", "ref": 1}\n'
    "]"
)
DECOMPOSE_LABEL = "Now, the multi-hop question is:"

SYNTHESIZE_SYSTEM = "You are an AI reasoning assistant."
SYNTHESIZE_INSTRUCTIONS = (
    "The user will provide:\n"
    "- A multi-hop question.\n"
    "- Its sub-questions, each with the answer extracted for it.\n"
    "- Retrieved knowledge for each sub-question (which may contain multiple relevant or "
    "irrelevant facts).\n\n"
    "Your task:\n"
    "Carefully reason using the retrieved knowledge as well as your existing knowledge to "
    "answer each sub-question, and then combine them to answer the original multi-hop "
    'question. Produce a coherent, natural-language reasoning chain in the "thought" field '
    "that explains how you used both the retrieved and your own knowledge to arrive at the "
    "final answer. Do not label facts as correct or incorrect; just synthesize them "
    "logically. Do not answer with 'I don't know', 'unknown', 'unclear'.\n\n"
    "## Output format:\n"
    "Return a JSON object with two fields:\n"
    '{"thought": "<a single, coherent paragraph explaining your reasoning process based on '
    'the retrieved knowledge>", "answer": "<the final concise answer: a word or short '
    'phrase>"}'
)
QUESTION_LABEL = "Multi-hop question:"
EXTRACTED_LABEL = "Extracted answer:"
KNOWLEDGE_LABEL = "Retrieved knowledge:"
NOTHING = "(none)"
SYNTHESIZE_LABEL = "Now, it is your turn."


@dataclass(frozen=True, slots=True)
class SynthesisStep:
    """One resolved sub-question as the synthesis call sees it: the text it was retrieved
    with (rewritten with the answer it refers to), the answer extracted for it (``""``
    when none) and the QA pairs retrieved for it, best first."""

    question: str
    answer: str
    pairs: tuple[QaPair, ...]


def shown_passage(title: str, passage: str) -> str:
    """The passage as the QA prompt shows it (title line first): what ``parse_qa_pairs``
    should check answers against, so that an answer taken from the title counts."""
    return f"{title.strip()}\n{passage.strip()}" if title.strip() else passage.strip()


def qa_request(title: str, passage: str, entities: Sequence[EntitySpan],
               noun_chunks: Sequence[str]) -> ChatRequest:
    """The QA-extraction prompt for one passage, with its named entities (text and
    label, as spaCy found them) and up to ``MAX_NOUN_CHUNKS`` noun chunks that are not
    entities; JSON, temperature 0."""
    example = (f"Example:\n\n{_qa_block(QA_EXAMPLE_TEXT, _entity_lines(QA_EXAMPLE_ENTITIES))}"
               f"\n\n[Output JSON]:\n{_pairs_json(QA_EXAMPLE_PAIRS)}")
    listed = _entity_lines([(e.text, e.label) for e in entities])
    phrases = _noun_phrases(noun_chunks, [e.text for e in entities])
    if phrases:
        listed += f"\n\n{NOUN_PHRASES_LABEL}\n" + "\n".join(f"- {p}" for p in phrases)
    user = (f"{QA_INSTRUCTIONS}\n\n{example}\n\nNow process the following passage:\n\n"
            f"{_qa_block(shown_passage(title, passage), listed)}\n\n{QA_CLOSING}")
    return ChatRequest(stage=QA, messages=(("system", QA_SYSTEM), ("user", user)),
                       temperature=0.0, response_format=ResponseFormat.JSON, shape=QaReply)


def decompose_request(question: str, *,
                      response_format: ResponseFormat = ResponseFormat.TEXT) -> ChatRequest:
    """The decomposition prompt; ``parse_decomposition`` reads the reply either way.

    Text by default: ``LlmClient.complete`` caches text replies only, and
    ``complete_json`` would spend a repair call the query does not have.
    """
    user = f"{DECOMPOSE_INSTRUCTIONS}\n\n{DECOMPOSE_LABEL}\n{_one_line(question)}"
    return ChatRequest(stage=DECOMPOSE, messages=(("system", DECOMPOSE_SYSTEM), ("user", user)),
                       temperature=0.0, max_tokens=DECOMPOSE_MAX_TOKENS,
                       response_format=response_format, shape=DecompositionReply)


def synthesize_request(question: str, steps: Sequence[SynthesisStep], *,
                       response_format: ResponseFormat = ResponseFormat.TEXT) -> ChatRequest:
    """The final answer call over the question and each resolved sub-question, in the
    order given; ``parse_synthesis`` reads the reply in either format."""
    example = _synthesis_block(
        "Which country is the capital of the city where the Eiffel Tower is located part of?",
        [SynthesisStep("In which city is the Eiffel Tower located?", "Paris", (
            QaPair("In which city is the Eiffel Tower located?",
                   "The Eiffel Tower is located in Paris."),
            QaPair("Where is the Eiffel Tower located?",
                   "The Eiffel Tower is located in Berlin."),
            QaPair("What is the Eiffel Tower?",
                   "The Eiffel Tower is a wrought-iron lattice tower."))),
         SynthesisStep("Which country is Paris the capital of?", "France", (
             QaPair("Paris is the capital of which country?", "Paris is the capital of France."),
             QaPair("What country is Paris the capital of?", "Paris is the capital of Spain."),
             QaPair("Berlin is the capital of which country?",
                    "Berlin is the capital of Germany.")))])
    expected = json.dumps({
        "thought": "Based on the retrieved knowledge, the Eiffel Tower is located in Paris. "
                   "The retrieved facts indicate that Paris is the capital of France. By "
                   "synthesizing these pieces of information, the country of the city where "
                   "the Eiffel Tower is located is France.",
        "answer": "France"})
    user = (f"{SYNTHESIZE_INSTRUCTIONS}\n\n## Example:\n{example}\n\nExpected output:\n"
            f"{expected}\n\n{SYNTHESIZE_LABEL}\n{_synthesis_block(question, steps)}")
    return ChatRequest(stage=SYNTHESIZE,
                       messages=(("system", SYNTHESIZE_SYSTEM), ("user", user)),
                       temperature=0.0, max_tokens=SYNTHESIZE_MAX_TOKENS,
                       response_format=response_format, shape=SynthesisReply)


def _qa_block(passage: str, entity_lines: str) -> str:
    return f"{ORIGINAL_TEXT_LABEL}\n{passage}\n\n{ENTITY_LIST_LABEL}\n{entity_lines}"


def _entity_lines(entities: Sequence[tuple[str, str]]) -> str:
    """``- text (LABEL)`` per entity, first mention kept, as the authors list them."""
    unique = dict.fromkeys((_one_line(text), label.strip()) for text, label in entities)
    lines = [f"- {text} ({label})" if label else f"- {text}" for text, label in unique if text]
    return "\n".join(lines) or NO_ENTITIES


def _noun_phrases(chunks: Sequence[str], entity_texts: Sequence[str]) -> list[str]:
    """Noun chunks that add to the entity list: not an entity, not repeated, the first few."""
    taken = {_one_line(text).casefold() for text in entity_texts}
    phrases: list[str] = []
    for chunk in chunks:
        phrase = _one_line(chunk)
        if phrase and phrase.casefold() not in taken:
            taken.add(phrase.casefold())
            phrases.append(phrase)
    return phrases[:MAX_NOUN_CHUNKS]


def _pairs_json(pairs: Sequence[QaPair]) -> str:
    items = ",\n".join("  " + json.dumps({"question": p.question, "answer": p.answer})
                       for p in pairs)
    return f"[\n{items}\n]"


def _synthesis_block(question: str, steps: Sequence[SynthesisStep]) -> str:
    """The question, then per step its header, extracted answer and knowledge, the
    retrieved pairs one blank line apart (question line, answer line)."""
    blocks = [f"{QUESTION_LABEL} {_one_line(question)}"]
    for number, step in enumerate(steps, start=1):
        knowledge = "\n\n".join(f"{_one_line(p.question)}\n{_one_line(p.answer)}"
                                for p in step.pairs) or NOTHING
        blocks.append(f"Sub-question {number}: {_one_line(step.question)}\n"
                      f"{EXTRACTED_LABEL} {_one_line(step.answer) or NOTHING}\n"
                      f"{KNOWLEDGE_LABEL}\n{knowledge}")
    return "\n\n".join(blocks)


def _one_line(text: str) -> str:
    # A newline inside a question, answer or entity would break the prompt's line layout.
    return " ".join(text.split())
