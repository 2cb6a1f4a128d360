"""Link task: record which catalogue titles each document's text names."""

from __future__ import annotations

import time

from hopindex.core.logging import get_logger
from hopindex.core.models import MentionSource, Stage
from hopindex.methods.extractive.linking import TitleLexicon
from hopindex.workers.app import app
from hopindex.workers.progress import is_cancelled, record_progress
from hopindex.workers.runtime import current_runtime

log = get_logger(__name__)


@app.task(name="hopindex.link")  # type: ignore[untyped-decorator]  # celery is untyped
def link(job_id: str, index: str, doc_ids: list[str]) -> list[str]:
    """Returns the entities whose set of mentioning documents changed."""
    runtime = current_runtime()
    state = runtime.backends.state
    if is_cancelled(state, job_id):
        return []
    started = time.perf_counter()
    lexicon = TitleLexicon(state.title_lexicon(index))
    touched: set[str] = set()
    documents = state.get_documents(index, doc_ids)
    for document in documents:
        mentions = lexicon.find_mentions(document.doc_id, document.text)
        touched |= state.replace_mentions(index, document.doc_id, mentions,
                                          (MentionSource.LEXICON,))
    record_progress(state, job_id, Stage.LINK, done=len(documents),
                    skipped=len(doc_ids) - len(documents))
    log.info("stage_finished", stage="link", job_id=job_id, index=index,
             documents=len(documents), lexicon=len(lexicon), touched=len(touched),
             duration_s=round(time.perf_counter() - started, 3))
    return sorted(touched)
