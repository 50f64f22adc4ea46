"""Prometheus' /metrics: the queues and the dashboard's own figures."""
