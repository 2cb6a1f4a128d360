"""The paper's three extraction prompts (its appendix, Figs. 6-8) as ``ChatRequest`` builders.

The paper rewrites each chunk resolving entity coreferences (Fig. 6), extracts the named
entities of the rewritten chunk (Fig. 7), then its facts with semantic triplets, given
those entities (Fig. 8). The instructions and the in-context examples are the figures'
own; the typeset figures repeat or garble a few lines of the Fig. 8 example, which are
given here once and whole. Each figure's example comes first and the chunk last, under
the same labels, so that readers of the prompt (the local test server included) take
the last ``Paragraph:`` as the chunk.

Figs. 7 and 8 ask for objects keyed ``n1, n2, ...`` and ``f1, f2, ...``. A strict JSON
schema cannot declare such keys, so these requests ask for a JSON object
(``json_object`` mode) with no schema; ``shapes`` holds the item shapes the replies
are read against.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.llm.chat import ChatRequest, ResponseFormat

# The stages LLM usage is recorded under, one per step.
COREFERENCE = "sirerag.coreference"
ENTITIES = "sirerag.entities"
FACTS = "sirerag.facts"

PARAGRAPH_LABEL = "Paragraph:"
PREVIOUS_LABEL = "Previous paragraph from Document:"
ENTITIES_LABEL = "Entities:"
OUTPUT_LABEL = "Output:"

# --- Fig. 6: coreference rewriting -----------------------------------------------------

REWRITE_INSTRUCTION = (
    "Instruction:\n"
    "Rewrite the below paragraph by resolving all entity coreferences with the preceding "
    "paragraph from document.\n"
    "- Resolve all inter-sentence pronoun references.\n"
    "- Make sure that all pronouns in a sentence refers to some named entity with in the "
    "same sentence.\n"
    "- Explicitly mention entity names wherever necessary to remove ambiguity from a "
    "sentence. Remember to make each sentence clear and unambiguous.\n"
    "- For each entity, use only the one most informative name.\n"
    "- Do not generate anything except the rewritten paragraph."
)
_REWRITE_EXAMPLE_PREVIOUS = (
    "Gualala, the isolated Mendocino Coast town with a name that leaves most visitors "
    "tongue-tied, is on a new list of the 50 best places to live in the United States. "
    "Men's Journal magazine describes Gualala as an \"outpost of adventure lifestyle\" in "
    "its latest edition, which goes on sale today. The magazine describes Gualala "
    "(pronounced wa-LA-la by locals) as one of the below-the-radar places to a make a move "
    "on before the word gets out. There were five such cities. The others were Homer, "
    "Alaska; Newport, Vt.; Logan, Utah; and Walla Walla, Wash. Rolling Stone magazine's "
    "Jann Wenner publishes Men's Journal, which has a paid circulation of about 620,000. "
    "Gualala joined three other California communities on the magazine's list: Santa "
    "Cruz, Mammoth Lakes and Bishop. \"We were looking for places that combined "
    "affordability, proximity to outdoor adventure and a generally undiscovered quality "
    "of life,\" said Erica Kestenbaum, a spokeswoman for Men's Journal.")
_REWRITE_EXAMPLE_PARAGRAPH = (
    "She said isolation played a factor. \"In Northern California, it's particularly "
    "difficult to find a beautiful coastal setting that isn't entirely overrun,\" she said. "
    "Gualala residents Monday were largely unaware of the magazine listing or the "
    "attention it could bring to the old logging town turned tourist center. A few "
    "coastal residents chuckled about any notion of affordability, given an influx of "
    "newcomers who've driven the median housing price to $580,000 compared to the median "
    "family income of $47,778. Others recalled an era when the Gualala region was better "
    "known for the logging of ancient redwoods, marijuana growing and boisterous beer "
    "drinking at the historic Gualala Hotel. Still there was a certain pride to the "
    "magazine's designation. Yvette White, a 25-year resident who works at the Gualala "
    "Sport & Tackle shop, said she's proud her town made it on the list.")
_REWRITE_EXAMPLE_OUTPUT = (
    "Erica Kestenbaum said isolation played a factor. \"In Northern California, it's "
    "particularly difficult to find a beautiful coastal setting that isn't entirely "
    "overrun,\" Erica Kestenbaum said. Gualala residents Monday were largely unaware of the "
    "Men's Journal magazine listing or the attention it could bring to the old logging "
    "town turned tourist center. A few coastal residents of Gualala chuckled about any "
    "notion of affordability, given an influx of newcomers who've driven the Gualala's "
    "median housing price to $580,000 compared to the median family income of $47,778. "
    "Other Gualala residents recalled an era when the Gualala region was better known for "
    "the logging of ancient redwoods, marijuana growing and boisterous beer drinking at "
    "the historic Gualala Hotel. Still there was a certain pride to the Men's Journal "
    "magazine's designation. Yvette White, a 25-year Gualala resident who works at the "
    "Gualala Sport & Tackle shop, said she's proud her town made it on the list.")

# --- Fig. 7: named entities ------------------------------------------------------------

ENTITIES_INSTRUCTION = (
    "Extract all named entities from the document. Also generate the type for each "
    "entity.\n"
    "Instructions\n"
    "- Generate only the most informative name for each named entity. Example: if John "
    "P., Parker, John Parker are coreferential, only generate John Parker.\n"
    "- Use your best understanding best on the domain of paragraph to decide appropriate "
    "entity types.\n"
    "- Respond using json format provided below.\n"
    '{\n    "n1": {"name": "entity_name", "type": "entity_type_label"},\n    "n2": {},\n}'
)
_ENTITIES_EXAMPLE_PARAGRAPH = (
    "Tucked into Eli Lilly's year-end earnings report, the company revealed positive "
    "results from Synergy-NASH—its phase 2 study of tirzepatide in adults in "
    "nonalcoholic steatohepatitis (NASH), also known as metabolic dysfunction-associated "
    "steatohepatitis (MASH).")
_ENTITIES_EXAMPLE_OUTPUT = (
    '{\n    "n1": {"name": "Eli Lilly", "type": "Organization"},\n'
    '    "n2": {"name": "Synergy-NASH", "type": "Clinical Trial"},\n'
    '    "n4": {"name": "tirzepatide", "type": "Drug"},\n'
    '    "n5": {"name": "nonalcoholic steatohepatitis", "type": "Disease"},\n'
    '    "n6": {"name": "metabolic dysfunction-associated steatohepatitis", '
    '"type": "Disease"},\n'
    '    "n7": {"name": "year-end earnings report", "type": "Document"}\n}')

# --- Fig. 8: facts with semantic triplets ------------------------------------------------

FACTS_INSTRUCTION = (
    "Extract all facts from the document. For each fact, also generate all semantic "
    "triplets\n"
    "Instructions\n"
    "- Consistently use the most informative name for each named entity in all facts and "
    "triplets.\n"
    "- Avoid pronouns or ambiguous references in facts and triplets. Instead, directly "
    "include all relevant named entities in facts.\n"
    "- Ensure that each semantic triplet contains head entity, predicate, and tail "
    "entity.\n"
    "- Ensure that at least one (preferably both) entity in each semantic triplet is "
    "present in the given entities list.\n"
    "- Respond using json format provided below:\n"
    '{\n    "f1": {\n        "fact": "A factual statement describing important information '
    '(preferably about some entities) from the paragraph",\n'
    '        "triplets": [["entity 1", "predicate", "entity 2"], '
    '["entity 1", "predicate", "entity 3"]]\n    },\n    "f2": {},\n}'
)
_FACTS_EXAMPLE_PARAGRAPH = (
    "Locked in a heated battle with Novo Nordisk's semaglutide franchise, Eli Lilly's "
    "tirzepatide is beginning to come into its own—both with regards to sales and amid "
    "attempts to show the dual GIP/GLP-1 agonist can strike out beyond diabetes and "
    "obesity. As Mounjaro, tirzepatide won its first FDA nod in Type 2 diabetes back in "
    "May 2022. An obesity approval followed last November, with that formulation of "
    "tirzepatide adopting the commercial moniker Zepbound. In 2023's fourth quarter, "
    "Mounjaro generated a whopping $2.2 billion in sales, a nearly eight-fold increase "
    "over the $279 million it pulled down during the same stretch in 2022. Year-to-date, "
    "the drug brough home around $5.2 billion in revenues, Lilly said in an earnings "
    "release Tuesday. Zepbound, for its part, generated $175.8 million during its first "
    "quarter on the market. Overall, Lilly reeled in around $9.4 billion in "
    "fourth-quarter sales, growing 28% over the $7.3 billion it made for the quarter in "
    "2022.")
_FACTS_EXAMPLE_ENTITIES = ("Eli Lilly, Novo Nordisk, Tirzepatide, Semaglutide, GLP-1, GIP, FDA, "
                           "Mounjaro, Zepbound")
_FACTS_EXAMPLE_OUTPUT = """{
    "f1": {"fact": "Eli Lilly's tirzepatide is competing with Novo Nordisk's semaglutide franchise.",
           "triplets": [["Eli Lilly", "competing with", "Novo Nordisk"], ["Tirzepatide", "is competing with", "Semaglutide"]]},
    "f2": {"fact": "Eli Lilly is trying to show tirzepatide, the dual GIP/GLP-1 agonist, can strike out beyond diabetes and obesity.",
           "triplets": [["Eli Lilly", "is trying to show", "Tirzepatide"], ["Tirzepatide", "is a", "dual GIP/GLP-1 agonist"], ["Tirzepatide", "can treat beyond", "Diabetes"], ["Tirzepatide", "can treat beyond", "Obesity"]]},
    "f3": {"fact": "Tirzepatide, under the brand name Mounjaro, received its first FDA approval for Type 2 diabetes in May 2022.",
           "triplets": [["Tirzepatide", "branded as", "Mounjaro"], ["Mounjaro", "won", "FDA approval"], ["FDA approval", "for", "Type 2 diabetes"], ["FDA approval", "was in", "May 2022"]]},
    "f4": {"fact": "Tirzepatide, under the brand name Zepbound, received an obesity approval in November 2022.",
           "triplets": [["Tirzepatide", "was branded as", "Zepbound"], ["Zepbound", "received", "Obesity approval"], ["Obesity approval", "was in", "November 2022"]]},
    "f5": {"fact": "Mounjaro generated $2.2 billion in sales in the fourth quarter of 2023, an eight-fold increase from the $279 million during the same period in 2022.",
           "triplets": [["Mounjaro", "2023's fourth quarter sales", "$2.2 billion sales"], ["Mounjaro", "2022's fourth quarter sales", "$279 million"]]},
    "f6": {"fact": "Mounjaro brought in around $5.2 billion in revenues year-to-date in 2023, Lilly said in an earnings release Tuesday",
           "triplets": [["Mounjaro", "2023 sales year-to-date", "$5.2 billion revenues"]]},
    "f7": {"fact": "Zepbound generated $175.8 million in sales in its first quarter on the market.",
           "triplets": [["Zepbound", "first quarter sales", "$175.8 million"]]},
    "f8": {"fact": "Eli Lilly's fourth-quarter sales were around $9.4 billion, a 28% increase over the $7.3 billion during the same quarter in 2022.",
           "triplets": [["Eli Lilly", "2023 fourth-quarter sales", "$9.4 billion"], ["Eli Lilly", "2022 fourth-quarter sales", "$7.3 billion"]]}
}"""  # noqa: E501  # one fact per line, as the figure lays them out


def paragraph(title: str, text: str) -> str:
    """A chunk as the three prompts show it: the title line first, as the one-call prompt
    does, so that the model can name the subject a chunk never names."""
    return (f"{title}\n{text}" if title else text).strip()


def rewrite_request(previous: str, current: str) -> ChatRequest:
    """Fig. 6: ``current`` rewritten with its coreferences resolved against ``previous``
    (the preceding chunk of the document, empty for its first); a text reply."""
    example = (f"{PREVIOUS_LABEL}\n{_REWRITE_EXAMPLE_PREVIOUS}\n\n{REWRITE_INSTRUCTION}\n\n"
               f"{PARAGRAPH_LABEL}\n{_REWRITE_EXAMPLE_PARAGRAPH}\n\n"
               f"{OUTPUT_LABEL}\n{_REWRITE_EXAMPLE_OUTPUT}")
    task = (f"{PREVIOUS_LABEL} {previous.strip()}\n\n{REWRITE_INSTRUCTION}\n\n"
            f"{PARAGRAPH_LABEL} {current.strip()}\n\n{OUTPUT_LABEL}")
    return ChatRequest(stage=COREFERENCE, messages=(("user", f"{example}\n\n{task}"),),
                       temperature=0.0)


def entities_request(rewritten: str) -> ChatRequest:
    """Fig. 7: the named entities of the rewritten chunk, ``{"n1": {"name", "type"}}``."""
    user = (f"{ENTITIES_INSTRUCTION}\n\nBelow is an example for reference.\n"
            f"{PARAGRAPH_LABEL} {_ENTITIES_EXAMPLE_PARAGRAPH}\n{OUTPUT_LABEL}\n"
            f"{_ENTITIES_EXAMPLE_OUTPUT}\n\n"
            f"{PARAGRAPH_LABEL} {rewritten.strip()}\n{OUTPUT_LABEL}")
    return ChatRequest(stage=ENTITIES, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON)


def facts_request(rewritten: str, entities: Sequence[str]) -> ChatRequest:
    """Fig. 8: the facts of the rewritten chunk with their semantic triplets, given the
    entities Fig. 7 found, ``{"f1": {"fact", "triplets"}}``."""
    # One line: the list is read up to its end (a name holding a newline would break it).
    names = ", ".join(" ".join(name.split()) for name in entities)
    user = (f"{FACTS_INSTRUCTION}\n\nBelow is an example for reference.\n"
            f"{PARAGRAPH_LABEL} {_FACTS_EXAMPLE_PARAGRAPH}\n"
            f"{ENTITIES_LABEL} {_FACTS_EXAMPLE_ENTITIES}\n{OUTPUT_LABEL}\n"
            f"{_FACTS_EXAMPLE_OUTPUT}\n\n"
            f"{PARAGRAPH_LABEL} {rewritten.strip()}\n{ENTITIES_LABEL} {names}\n{OUTPUT_LABEL}")
    return ChatRequest(stage=FACTS, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON)
