"""The cache in front of the sessions: each process's memory, an entry kept
at most ``SESSION_CACHE_TTL_S`` seconds.

Sessions live in the database so that a logout can end them (a copied
cookie then stops working). Read from the database on every request they
cost a page or API answer 1.7 ms of CPU more (bench/page_cpu.py, the failed
list's JSON: 2.95 -> 4.69 ms) plus, under daphne, a database connection
opened and closed per request: the overview's JSON went from 6.6 to 9.4 ms
and the failed list's from 6.3 to 9.9 ms (bench/dashboard.py, 2026-12-02).
Django's ``cached_db`` engine reads them from a cache instead; this cache
keeps each entry no longer than the TTL, whatever timeout the engine asks
for (the session's whole age), like the signed-in user
(dashboard.user_cache) and the permissions: a logout through this process
applies at once (the engine deletes its entry), one through another process
within the TTL.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.locmem import LocMemCache

SESSION_CACHE_TTL_S = 10


class ShortLivedLocMemCache(LocMemCache):
    """Django's per-process memory cache with every timeout capped."""

    def get_backend_timeout(self, timeout: Any = DEFAULT_TIMEOUT) -> float | None:
        if timeout is DEFAULT_TIMEOUT or timeout is None or timeout > SESSION_CACHE_TTL_S:
            timeout = SESSION_CACHE_TTL_S
        return super().get_backend_timeout(timeout)
