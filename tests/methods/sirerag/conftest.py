"""SiReRAG tests' view of what the LLM test server was asked: every chat request's
message contents and the task kind the server took it for, in arrival order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from hopindex.testing import llm_api
from hopindex.testing.llm_responses import Reply, compute_reply


@dataclass
class ChatLog:
    """The requests the server answered (in this process), oldest first."""

    requests: list[tuple[str, list[str]]] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[str]:
        """The prompts (message contents joined) of requests taken for ``kind``."""
        return ["\n\n".join(messages) for seen, messages in self.requests if seen == kind]

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.requests]


@pytest.fixture
def chat_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatLog]:
    """Record every chat request a test server in this process answers: the server runs
    in a thread here, and every reply goes through ``compute_reply``."""
    log = ChatLog()
    def recording(messages: list[str], **options: object) -> Reply:
        reply = compute_reply(messages, **options)  # type: ignore[arg-type]
        log.requests.append((reply.kind.value, list(messages)))
        return reply

    monkeypatch.setattr(llm_api, "compute_reply", recording)
    yield log
