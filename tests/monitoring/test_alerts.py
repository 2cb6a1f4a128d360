"""The alert rules fire when they should and stay quiet otherwise: ``promtool test rules``
replays series through them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.monitoring.conftest import monitoring_dir
from tests.monitoring.prometheus_server import PrometheusTools

RULES = monitoring_dir() / "prometheus" / "alerts.yml"


def _case(series: dict[str, str], checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "alert_rule_test": checks}


def _alert(name: str, at: str, *expected: dict[str, Any]) -> dict[str, Any]:
    return {"eval_time": at, "alertname": name, "exp_alerts": list(expected)}


CASES = [
    # A running job silent for over 30 min (idle grows a minute a minute); quiet before.
    _case({"hopindex_running_job_idle_seconds{instance='w1:9100'}": "0+60x60"}, [
        _alert("HopindexJobStuck", "20m"),
        _alert("HopindexJobStuck", "40m", {
            "exp_labels": {"severity": "warning"},
            "exp_annotations": {
                "summary": "A running job has reported no progress for 40m 0s",
                "description": "See `hopindex jobs` for the job and its last phase; "
                               "`hopindex beat` re-drives stalled jobs."}}),
    ]),
    # One more failed job than half an hour ago.
    _case({"hopindex_jobs{state='failed',instance='w1:9100'}": "0x20 1x20"}, [
        _alert("HopindexJobsFailing", "10m"),
        _alert("HopindexJobsFailing", "25m", {
            "exp_labels": {"severity": "warning"},
            "exp_annotations": {"summary": "1 job(s) failed in the last 30 minutes",
                                "description": "`hopindex jobs --json` gives each failed "
                                               "job's reason."}}),
    ]),
    # A job paused on its budget for over 10 min; quiet before.
    _case({"hopindex_jobs{state='paused',instance='w1:9100'}": "0x5 1x30"}, [
        _alert("HopindexJobPaused", "12m"),
        _alert("HopindexJobPaused", "20m", {
            "exp_labels": {"severity": "info"},
            "exp_annotations": {
                "summary": "1 job(s) paused on their LLM budget",
                "description": "`hopindex jobs` shows why and what was spent; `hopindex "
                               "jobs resume JOB_ID --max-cost …` goes on."}}),
    ]),
    # stage1 keeps growing past 100; stage2 is long but flat: only stage1 alerts.
    _case({"hopindex_queue_depth{queue='stage1',instance='w1:9100'}": "0+10x60",
           "hopindex_queue_depth{queue='stage2',instance='w1:9100'}": "500x60"}, [
        _alert("HopindexBacklogGrowing", "45m", {
            "exp_labels": {"severity": "warning", "queue": "stage1"},
            "exp_annotations": {
                "summary": "Queue stage1 holds 450 messages and keeps growing",
                "description": "Add workers for it (docker compose up --scale "
                               "worker-stage1=N) or check the ones it has."}}),
    ]),
    # 20 of every 120 requests get 429 (17%); an error-free model next to it stays quiet.
    _case({"hopindex_llm_requests_total{stage='stage1',model='m',outcome='ok',instance='a'}":
           "0+100x30",
           "hopindex_llm_requests_total{stage='stage1',model='m',outcome='rate_limited',"
           "instance='a'}": "0+20x30",
           "hopindex_llm_requests_total{stage='stage1',model='quiet',outcome='ok',instance='a'}":
           "0+100x30"}, [
        _alert("HopindexLlmRateLimited", "20m", {
            "exp_labels": {"severity": "warning", "model": "m"},
            "exp_annotations": {
                "summary": "16.67% of requests to m get 429",
                "description": "HOPINDEX_LLM_REQUESTS_PER_MINUTE / _TOKENS_PER_MINUTE are "
                               "above what the provider allows."}}),
    ]),
    # Every query between 1 s and 5 s: p95 near 4.8 s, over the 2 s budget.
    _case({"hopindex_query_duration_seconds_bucket{method='indexrag',le='1',instance='a'}":
           "0x30",
           "hopindex_query_duration_seconds_bucket{method='indexrag',le='5',instance='a'}":
           "0+10x30",
           "hopindex_query_duration_seconds_bucket{method='indexrag',le='+Inf',instance='a'}":
           "0+10x30"}, [
        _alert("HopindexQueryLatencyHigh", "20m", {
            "exp_labels": {"severity": "warning", "method": "indexrag"},
            "exp_annotations": {"summary": "p95 latency of indexrag queries is 4.8s"}}),
    ]),
    # A worker whose scrape fails for 2 minutes.
    _case({"up{job='hopindex-worker',instance='w1:9100',service='worker-stage1'}":
           "1 1 1 0 0 0 0 0 0 0"}, [
        _alert("HopindexWorkerDown", "3m"),
        _alert("HopindexWorkerDown", "8m", {
            "exp_labels": {"severity": "critical", "job": "hopindex-worker",
                           "instance": "w1:9100", "service": "worker-stage1"},
            "exp_annotations": {"summary": "Worker w1:9100 (worker-stage1) is down"}}),
    ]),
]


def test_alert_rules_fire_on_the_situations_they_name(tools: PrometheusTools,
                                                      tmp_path: Path) -> None:
    """Stuck and failing jobs, a growing backlog, a 429 rate, a slow p95 and a dead worker
    each raise their alert with the labels and text an operator reads; before their
    ``for`` period, or for a flat queue or a healthy model, nothing fires."""
    path = tmp_path / "alerts_test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [str(RULES)], "evaluation_interval": "1m",
                                    "tests": CASES}, sort_keys=False))
    done = tools.promtool_run("test", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
