"""``metrics``: the queues and the dashboard's own health for Prometheus, behind a
bearer token (``ECHOMQ_METRICS_TOKEN``; 404 without it). Each scrape reads
Redis afresh, bounded: at most ``MAX_QUEUES`` queues, a few reads per queue and
per connection, never anything per job.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

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

from dashboard.core import conf, connections
from dashboard.core.lookup import all_queues
from dashboard.core.redis import get_client
from queues.connection import REDIS_FAILURES
from queues.latency import STEPS_PER_DOUBLING
from queues.read.counts import QueueSummary, queue_summaries
from queues.read.history import Durations, Totals, collector_status, stopped_histories, totals
from queues.read.refs import QueueRef
from queues.read.workers import worker_counts

MAX_QUEUES = 500
# Histogram bounds for Prometheus: every fourth latency bucket bound, 1 ms to
# 2^24 ms (4.7 h), so each cumulative count is exact (no bucket is split).
LE_POWERS = range(25)
# The same queue name may live on two servers.
SERVER_LABELS = ["connection"]
LABELS = [*SERVER_LABELS, "prefix", "queue"]


def _labels(ref: QueueRef) -> list[str]:
    return [ref.connection, ref.prefix, ref.name]


def _histogram(family: HistogramMetricFamily, ref: QueueRef, durations: Durations) -> None:
    buckets: list[tuple[str, float]] = []
    for power in LE_POWERS:
        top = power * STEPS_PER_DOUBLING
        counted = sum(n for bucket, n in durations.buckets.items() if bucket <= top)
        buckets.append((repr(2**power / 1000), counted))
    buckets.append(("+Inf", durations.count))
    family.add_metric(_labels(ref), buckets, durations.sum_ms / 1000)


@dataclass(frozen=True, slots=True)
class ServerReading:
    """Everything one scrape reads from one server, read before any is exported:
    a server that fails halfway adds no sample, rather than half of them."""

    summaries: list[QueueSummary]
    workers: dict[QueueRef, int] | None  # None: the server would not list its clients
    recorded: dict[QueueRef, Totals]
    stopped: dict[QueueRef, str]  # the queues whose history the collector stopped
    lag_s: float | None


class Families(Collector):
    """The metric families of one scrape, in the order the text lists them;
    every server adds its samples to the same families (each listed once)."""

    def __init__(self) -> None:
        gauge = partial(GaugeMetricFamily, labels=LABELS)
        counter = partial(CounterMetricFamily, labels=LABELS)
        histogram = partial(HistogramMetricFamily, labels=LABELS)
        server = partial(GaugeMetricFamily, labels=SERVER_LABELS)
        self.up = server("echomq_redis_up", "1 when the dashboard reached Redis for this scrape")
        self.jobs = gauge("echomq_queue_jobs", "Jobs in each state", labels=[*LABELS, "state"])
        self.paused = gauge("echomq_queue_paused", "1 when the queue is paused")
        self.workers = gauge("echomq_queue_workers", "Workers connected to the queue")
        self.completed = counter(
            "echomq_queue_completed", "Jobs completed, as the history collector counted them"
        )
        self.failed = counter(
            "echomq_queue_failed", "Jobs failed, as the history collector counted them"
        )
        self.backlog = gauge(
            "echomq_queue_backlog", "Jobs ready to run (waiting + prioritized), last sample"
        )
        self.wait = histogram("echomq_queue_wait_seconds", "Time from ready to active")
        self.run = histogram("echomq_queue_run_seconds", "Time from active to completed or failed")
        self.gaps = counter(
            "echomq_history_gaps", "Reads that found events trimmed before the collector read them"
        )
        self.history_stopped = gauge(
            "echomq_history_stopped",
            "1 when the collector stopped this queue's history: a key of it is broken"
            " (the queue's page names it)",
        )
        self.lag = server(
            "echomq_collector_lag_seconds",
            "Seconds since the history collector last read every events stream to its end",
        )
        self.omitted = GaugeMetricFamily(
            "echomq_queues_omitted",
            f"Queues left out of this scrape (at most {MAX_QUEUES} are exported)",
            labels=[],
        )

    def add(self, connection: str, reading: ServerReading | None) -> None:
        self.up.add_metric([connection], 0 if reading is None else 1)
        if reading is None:
            return
        if reading.lag_s is not None:
            self.lag.add_metric([connection], reading.lag_s)
        for summary in reading.summaries:
            for state, count in summary.counts.items():
                self.jobs.add_metric([*_labels(summary.ref), state], count)
            self.paused.add_metric(_labels(summary.ref), 1 if summary.paused else 0)
        for ref, count in (reading.workers or {}).items():
            self.workers.add_metric(_labels(ref), count)
        for ref, total in reading.recorded.items():
            figures = total.figures
            self.completed.add_metric(_labels(ref), figures.completed)
            self.failed.add_metric(_labels(ref), figures.failed)
            if figures.backlog is not None:
                self.backlog.add_metric(_labels(ref), figures.backlog)
            _histogram(self.wait, ref, figures.wait)
            _histogram(self.run, ref, figures.run)
            self.gaps.add_metric(_labels(ref), figures.gaps)
            self.history_stopped.add_metric(_labels(ref), 1 if ref in reading.stopped else 0)

    def collect(self) -> Iterator[Metric]:
        return iter(vars(self).values())


def _scrape() -> Families:
    """Every connection's queues read, at most ``MAX_QUEUES`` in all (the
    overview's order)."""
    families = Families()
    kept = omitted = 0
    for connection in connections.configured():
        try:
            # A cluster client already fails here when it reaches no node.
            client = get_client(connection.name)
            refs = all_queues(client, connection=connection.name)
            room = max(0, MAX_QUEUES - kept)
            kept += min(room, len(refs))
            omitted += max(0, len(refs) - room)
            served = refs[:room]
            reading: ServerReading | None = ServerReading(
                queue_summaries(client, served, metrics_points=0),
                worker_counts(client, served),
                totals(client, served),
                stopped_histories(client, served),
                collector_status(client).lag_s(int(time.time() * 1000)),
            )
        except REDIS_FAILURES:  # this server is down: echomq_redis_up 0
            reading = None
        families.add(connection.name, reading)
    families.omitted.add_metric([], omitted)
    return families


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token = conf.metrics_token()
    if token is None:
        raise Http404("metrics are off (ECHOMQ_METRICS_TOKEN is not set)")
    scheme, _, sent = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not sent.strip():
        response = HttpResponse(
            "a bearer token is required\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if not hmac.compare_digest(sent.strip().encode(), token.encode()):
        return HttpResponse("wrong token\n", status=403, content_type="text/plain")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_scrape())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
