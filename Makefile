# Every command is defined once here; `demo` and `test` install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# torch first, pinned: any other torch request downloads a multi-GB CUDA build.
TORCH := torch==2.13.0

.PHONY: setup demo test test-unit test-stress lint bench bench-peers bench-scale clean \
	redis-server prometheus alertmanager docker-compose chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/hopindex quickstart

# Debian packages some tests run (never as services): installed when missing and we
# are root, as on CI machines; otherwise the tests that need them skip, saying why.
define apt_tool
	@command -v $(1) >/dev/null || { [ "$$(id -u)" = 0 ] && \
	    apt-get update -q && apt-get install -y -q --no-install-recommends $(2); } || \
	    echo "warning: $(2) is not installed; $(3) tests will be skipped"
endef

# Integration tests start a private redis-server when none answers.
redis-server:
	$(call apt_tool,redis-server,redis-server,Redis)

# The monitoring tests run promtool and a real Prometheus on loopback.
prometheus:
	$(call apt_tool,promtool,prometheus,monitoring)

# The monitoring tests check the Alertmanager config with amtool and run a real Alertmanager.
alertmanager:
	$(call apt_tool,amtool,prometheus-alertmanager,Alertmanager)

# The API reference test renders /v1/docs in headless Chromium.
chromium:
	$(call apt_tool,chromium,chromium,API reference rendering)

# tests/deploy validates docker-compose.yml (`config` needs no Docker engine).
docker-compose:
	$(call apt_tool,docker-compose,docker-compose,compose)

# Two pytest processes (TESTING.md): most of the suite waits on worker processes, Redis
# or the network, so a 2-core machine runs two test streams in about 0.7x the time of one.
test: setup redis-server prometheus alertmanager docker-compose chromium
	$(PY) -m pytest -q -n 2 --dist loadgroup

test-unit: setup
	$(PY) -m pytest -q -m "not integration"

# The whole suite with one core held busy by another process: a test that passes only
# on an idle machine fails here before it fails in CI (TESTING.md).
test-stress: setup redis-server prometheus alertmanager docker-compose chromium
	$(PY) tools/test_under_load.py --hogs 1 -- -q -n 2 --dist loadgroup

# lint-imports checks the [tool.importlinter] contracts in pyproject.toml (no cache: the
# graph takes well under a second); check_cycles.py the module-level cycles they cannot.
lint: setup
	$(VENV)/bin/ruff check hopindex tests benchmarks tools
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy tools
	$(VENV)/bin/lint-imports --no-cache --no-logo
	$(PY) tools/check_cycles.py

bench: setup
	$(PY) benchmarks/ingest_2wiki.py
	$(PY) benchmarks/query_latency.py
	$(PY) benchmarks/bridgerag_overhead.py
	$(PY) benchmarks/metrics_overhead.py
	$(PY) benchmarks/tracing_overhead.py
	$(PY) benchmarks/rerank_overhead.py
	$(PY) benchmarks/api_overhead.py
	$(PY) benchmarks/api_key_flood.py
	$(PY) benchmarks/llm_limiter.py
	$(PY) benchmarks/state_store_bulk.py
	$(PY) benchmarks/hung_llm_query.py
	$(PY) benchmarks/indexrag_pipeline.py
	$(PY) benchmarks/stream_ttft.py
	$(PY) benchmarks/batch_mode.py
	$(PY) benchmarks/ingest_multiplier.py --limit 1500
	$(PY) benchmarks/distributed_ingest.py
	$(PY) benchmarks/one_machine.py
	$(PY) benchmarks/sirerag_clustering.py
	$(PY) benchmarks/sirerag_pipeline.py
	$(PY) benchmarks/compactrag_pipeline.py
	$(PY) benchmarks/kgbridge_pipeline.py --corpus 2wiki
	$(PY) benchmarks/hops_eval.py
	$(PY) benchmarks/dry_run.py
	$(PY) benchmarks/dry_run_2wiki.py
	$(PY) benchmarks/onnx_embedder.py
	$(PY) benchmarks/cold_query.py
	$(PY) benchmarks/mcp_stdio.py
	$(PY) benchmarks/import_cost.py
	$(PY) benchmarks/ingest_large_json.py
	$(PY) benchmarks/big_document.py
	$(PY) -m pip install --quiet -r benchmarks/readers/requirements-compare.txt
	$(PY) benchmarks/readers_compare.py
	$(PY) benchmarks/readers/pdf_memory.py
	$(PY) benchmarks/readers/pdf_ingest_memory.py
	$(PY) benchmarks/hotpot_as_files.py
	rm -rf benchmarks/out/hotpot-data
	HOPINDEX_DATA_DIR=benchmarks/out/hotpot-data $(VENV)/bin/hopindex eval --index hotpot \
	    --dataset hopindex/sample/hotpotqa-100/questions.json \
	    --corpus hopindex/sample/hotpotqa-100/corpus.json \
	    --method naive --method extractive --json benchmarks/out/eval-hotpotqa-100.json

# The runtime at scale (benchmarks/scale/): a synthetic corpus of SIZE documents through
# real workers on a private Redis. Not part of `bench`, being too long: on 2 cores
# 10,000 documents take about 2.5 minutes, 100,000 about 20. PHASES_ONLY=1 runs every
# step's planning and fan-out and the tasks' state writes in one process without spaCy
# or the embed step; with STEPS=0 only the submit and stage 1's plan (1,000,000
# documents: about 4 minutes). fit.py then tables every run in benchmarks/out/ by size.
SIZE ?= 10000
bench-scale: setup redis-server
	$(PY) benchmarks/scale/run.py --size $(SIZE) $(if $(PHASES_ONLY),--phases-only) \
	    $(if $(STEPS),--steps $(STEPS))
	$(PY) benchmarks/scale/fit.py benchmarks/out/scale-*.json

# The peers of benchmarks/peers/ get a venv of their own, never the project's: torch
# first and pinned, as above, so their requirements take the CPU build already there.
PEERS_VENV := benchmarks/peers/.venv
PEERS_STAMP := $(PEERS_VENV)/.installed-stamp

$(PEERS_STAMP): benchmarks/peers/requirements.txt
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet $(TORCH)
	$(PEERS_VENV)/bin/python -m pip install --quiet $(TORCH) -r benchmarks/peers/requirements.txt
	touch $(PEERS_STAMP)

bench-peers: setup $(PEERS_STAMP)
	$(PY) benchmarks/peers/ingest_peers.py

clean:
	rm -rf $(VENV) .hopindex .mypy_cache .ruff_cache .pytest_cache
