"""The metrics history: the queue page's chart, the overview's last hour, the collector."""
