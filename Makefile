# Every command is defined once here; `demo` and `test` install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# torch first, pinned: any other torch request downloads a multi-GB CUDA build.
TORCH := torch==2.13.0

.PHONY: setup demo test test-unit lint bench clean redis-server

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/hopindex quickstart

# Integration tests start a private redis-server when none answers; install the
# Debian package when the binary is missing (needs root, as on CI machines).
redis-server:
	@command -v redis-server >/dev/null || { [ "$$(id -u)" = 0 ] && \
	    apt-get update -q && apt-get install -y -q redis-server; } || \
	    echo "warning: redis-server is not installed; Redis tests will be skipped"

test: setup redis-server
	$(PY) -m pytest -q

test-unit: setup
	$(PY) -m pytest -q -m "not integration"

lint: setup
	$(VENV)/bin/ruff check hopindex tests benchmarks
	$(VENV)/bin/mypy

bench: setup
	$(PY) benchmarks/ingest_2wiki.py
	$(PY) benchmarks/query_latency.py
	$(PY) benchmarks/llm_limiter.py
	$(PY) benchmarks/indexrag_pipeline.py
	$(PY) benchmarks/distributed_ingest.py
	rm -rf benchmarks/out/hotpot-data
	HOPINDEX_DATA_DIR=benchmarks/out/hotpot-data $(VENV)/bin/hopindex eval --index hotpot \
	    --dataset hopindex/sample/hotpotqa-100/questions.json \
	    --corpus hopindex/sample/hotpotqa-100/corpus.json \
	    --method naive --method extractive --json benchmarks/out/eval-hotpotqa-100.json

clean:
	rm -rf $(VENV) .hopindex .mypy_cache .ruff_cache .pytest_cache
