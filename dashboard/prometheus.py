"""``metrics``: the queues and the dashboard's own health for Prometheus.

Scraped with a bearer token (``ECHOMQ_METRICS_TOKEN``, compared in constant
time; no login, no session); without the setting the endpoint does not exist
(404). Every scrape reads Redis afresh through ``QueueCollector`` (a
prometheus-client custom collector in a registry of its own): nothing is kept
between scrapes and no global metric is changed by a request.

What a scrape costs, bounded: for at most ``MAX_QUEUES`` queues (the first by
name; ``echomq_queues_omitted`` says how many were left out), one pipelined
count of each state (queues.read.counts), one small hash per queue (the
history's running totals, at most ~270 fields), one CLIENT LIST (one line per
connection) and one status hash: never anything per job.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterator, Sequence

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from redis import Redis
from redis.exceptions import RedisError

from dashboard import conf
from dashboard.lookup import all_queues
from dashboard.redis import get_client
from queues.latency import STEPS_PER_DOUBLING
from queues.read.counts import queue_summaries
from queues.read.history import Durations, collector_status, totals
from queues.read.refs import QueueRef
from queues.read.workers import worker_counts

MAX_QUEUES = 500
# Histogram bounds for Prometheus: every fourth latency bucket bound, 1 ms to
# 2^24 ms (4.7 h), so each cumulative count is exact (no bucket is split).
LE_POWERS = range(25)
LABELS = ["prefix", "queue"]


def _labels(ref: QueueRef) -> list[str]:
    return [ref.prefix, ref.name]


def _histogram(family: HistogramMetricFamily, ref: QueueRef, durations: Durations) -> None:
    buckets: list[tuple[str, float]] = []
    for power in LE_POWERS:
        top = power * STEPS_PER_DOUBLING
        counted = sum(n for bucket, n in durations.buckets.items() if bucket <= top)
        buckets.append((repr(2**power / 1000), counted))
    buckets.append(("+Inf", durations.count))
    family.add_metric(_labels(ref), buckets, durations.sum_ms / 1000)


class QueueCollector(Collector):
    """Reads the queues on each ``collect`` (each scrape)."""

    def __init__(self, client: Redis, refs: Sequence[QueueRef], omitted: int) -> None:
        self.client = client
        self.refs = list(refs)
        self.omitted = omitted

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "echomq_redis_up", "1 when the dashboard reached Redis for this scrape"
        )
        try:
            families = list(self._queues())
        except RedisError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _queues(self) -> Iterator[Metric]:
        summaries = queue_summaries(self.client, self.refs, metrics_points=0)
        workers = worker_counts(self.client, self.refs)
        recorded = totals(self.client, self.refs)
        status = collector_status(self.client)

        jobs = GaugeMetricFamily(
            "echomq_queue_jobs", "Jobs in each state", labels=[*LABELS, "state"]
        )
        paused = GaugeMetricFamily(
            "echomq_queue_paused", "1 when the queue is paused", labels=LABELS
        )
        for summary in summaries:
            for state, count in summary.counts.items():
                jobs.add_metric([*_labels(summary.ref), state], count)
            paused.add_metric(_labels(summary.ref), 1 if summary.paused else 0)
        yield jobs
        yield paused
        if workers is not None:  # None: the server would not list its clients
            connected = GaugeMetricFamily(
                "echomq_queue_workers", "Workers connected to the queue", labels=LABELS
            )
            for ref, count in workers.items():
                connected.add_metric(_labels(ref), count)
            yield connected

        completed = CounterMetricFamily(
            "echomq_queue_completed",
            "Jobs completed, as the history collector counted them",
            labels=LABELS,
        )
        failed = CounterMetricFamily(
            "echomq_queue_failed",
            "Jobs failed, as the history collector counted them",
            labels=LABELS,
        )
        backlog = GaugeMetricFamily(
            "echomq_queue_backlog",
            "Jobs ready to run (waiting + prioritized), last sample",
            labels=LABELS,
        )
        wait = HistogramMetricFamily(
            "echomq_queue_wait_seconds", "Time from ready to active", labels=LABELS
        )
        run = HistogramMetricFamily(
            "echomq_queue_run_seconds", "Time from active to completed or failed", labels=LABELS
        )
        for ref, total in recorded.items():
            figures = total.figures
            completed.add_metric(_labels(ref), figures.completed)
            failed.add_metric(_labels(ref), figures.failed)
            if figures.backlog is not None:
                backlog.add_metric(_labels(ref), figures.backlog)
            _histogram(wait, ref, figures.wait)
            _histogram(run, ref, figures.run)
        gaps = CounterMetricFamily(
            "echomq_history_gaps",
            "Reads that found events trimmed before the collector read them",
            labels=LABELS,
        )
        for ref, total in recorded.items():
            gaps.add_metric(_labels(ref), total.figures.gaps)
        yield from (completed, failed, backlog, wait, run, gaps)

        lag = status.lag_s(int(time.time() * 1000))
        if lag is not None:
            yield GaugeMetricFamily(
                "echomq_collector_lag_seconds",
                "Seconds since the history collector last read every events stream to its end",
                value=lag,
            )
        yield GaugeMetricFamily(
            "echomq_queues_omitted",
            f"Queues left out of this scrape (at most {MAX_QUEUES} are exported)",
            value=self.omitted,
        )


def _authorised(request: HttpRequest, token: str) -> bool | None:
    """True: the right token; False: a wrong one; None: none sent."""
    header = request.headers.get("Authorization", "")
    scheme, _, sent = header.partition(" ")
    if scheme.lower() != "bearer" or not sent.strip():
        return None
    return hmac.compare_digest(sent.strip().encode(), token.encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token = conf.metrics_token()
    if token is None:
        raise Http404("metrics are off (ECHOMQ_METRICS_TOKEN is not set)")
    authorised = _authorised(request, token)
    if authorised is None:
        response = HttpResponse(
            "a bearer token is required\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if not authorised:
        return HttpResponse("wrong token\n", status=403, content_type="text/plain")
    client = get_client()
    try:
        refs = all_queues(client)
    except RedisError:
        refs = []
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(client, refs[:MAX_QUEUES], max(0, len(refs) - MAX_QUEUES)))
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
