"""Monitoring: Prometheus metrics, Celery signal hooks, dashboards and alerts.

- ``metrics``: every in-process metric (names and labels of docs/architecture.md), with the
  label values of ``labels``;
- ``llm``: the LLM client's observer; ``rerank``: the rerankers'; ``queries``: per-query
  histograms;
- ``tasks``: Celery signal hooks (duration, outcome, structlog job context);
- ``collector``: queue depth, jobs and units from Redis, exported by one process;
- ``multiprocess``: a prefork worker's metrics across its processes;
- ``process_tree``: a worker's ``process_*`` series, over all its processes;
- ``exposition``: ``render_metrics()`` for ``/metrics`` (text or OpenMetrics, as the
  request accepts) and a small metrics server;
- ``prometheus/``, ``alertmanager/`` and ``grafana/``: scrape configs (docker-compose's
  and ``prometheus-hosts.yml`` with its ``targets/`` files), alert rules, Alertmanager
  config template, dashboard, provisioning.

Importing this package imports no metrics library: a worker must set up multiprocess
mode first.
"""
