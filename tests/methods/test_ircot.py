"""IRCoT's pure parts: the step prompt, the kept sentence and the stop rule."""

from __future__ import annotations

from hopindex.methods.ircot import first_sentence, is_final, reasoning_request
from hopindex.testing.llm_responses import TaskKind, classify


def test_first_sentence_is_kept_and_labels_dropped() -> None:
    """Only the first sentence of a reply becomes the next query, without a 'Reasoning:'
    label and with whitespace collapsed."""
    assert first_sentence("Reasoning: Marie Curie was born in Warsaw.  Warsaw is in "
                          "Poland.") == "Marie Curie was born in Warsaw."
    assert first_sentence("  Pierre Curie married\nMarie Curie in 1895.") == (
        "Pierre Curie married Marie Curie in 1895.")
    assert first_sentence("   ") == ""


def test_reasoning_stops_on_answer_is_or_done() -> None:
    """'answer is' anywhere in the reply, or a DONE token, ends the loop; a plain
    reasoning sentence does not."""
    assert is_final("Warsaw is in Poland. So the answer is Poland.")
    assert is_final("The Answer Is Warsaw")
    assert is_final("Search: DONE")
    assert not is_final("Marie Curie was born in Warsaw.")
    assert not is_final("The DONEGAL county is in Ireland.")


def test_step_prompt_carries_context_question_and_steps() -> None:
    """The step prompt lists the gathered texts, the question and the steps so far, with
    '(none)' before the first step, and reads as an IRCoT step to an OpenAI-style model
    (and to the test server's classifier)."""
    first = reasoning_request("Where was Marie Curie born?", ["Marie Curie was born in Warsaw."],
                              [])
    user = first.messages[-1][1]
    assert "Context:\nMarie Curie was born in Warsaw." in user
    assert "Question: Where was Marie Curie born?" in user
    assert "Reasoning so far:\n(none)" in user
    assert classify(user) is TaskKind.IRCOT
    later = reasoning_request("Q?", ["a", "b"], ["Step one.", "Step two."])
    assert "Reasoning so far:\nStep one.\nStep two.\n" in later.messages[-1][1]
    assert first.temperature == 0.0 and first.max_tokens is not None
