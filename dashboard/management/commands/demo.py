"""``manage.py demo``: the dashboard with demo traffic, nothing to set up: Redis
(REDIS_URL or a private one), the tables, a staff user with a fresh password,
the demo producers and workers in a thread, and daphne.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from queues.connection import redacted
from queues.demo import run_demo
from queues.redis_server import resolve_redis

DEMO_USER = "demo"


class Command(BaseCommand):
    help = "Start Redis (unless REDIS_URL), demo traffic and the dashboard on 127.0.0.1."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--prefix", default="bull", help="key prefix of the demo queues")
        parser.add_argument("--no-traffic", action="store_true", help="serve without demo jobs")

    def handle(self, *args: Any, **options: Any) -> None:
        redis = resolve_redis()
        # The server, its channel layer and any process the demo starts use this Redis.
        settings.REDIS_URL = redis.url
        os.environ["REDIS_URL"] = redis.url
        call_command("migrate", interactive=False, verbosity=0)
        # Sessions that expired without a logout are rows nothing else removes.
        call_command("clearsessions", verbosity=0)
        password = self._demo_user()
        stop = threading.Event()
        traffic, producer = "off", None
        if not options["no_traffic"]:
            traffic, producer = self._start_traffic(redis.url, options["prefix"], stop)

        def banner(port: int) -> str:
            return f"""
  EchoMQ dashboard   http://{options["host"]}:{port}/
  login              {DEMO_USER} / {password}
  Redis              {redacted(redis.url)} ({redis.source})
  demo traffic       {traffic}
  stop with Ctrl+C
"""

        try:
            self._serve(options["host"], options["port"], banner)
        finally:
            stop.set()
            # The private Redis stops at exit: let the workers finish first, or
            # each of them reports its lost connection on the way out.
            if producer is not None:
                producer.join(timeout=15)

    def _demo_user(self) -> str:
        password = secrets.token_urlsafe(12)
        user, _ = User.objects.get_or_create(username=DEMO_USER)
        user.is_staff = True
        user.is_active = True
        user.set_password(password)
        user.save()
        perms = Permission.objects.filter(
            content_type__app_label="dashboard", codename__in=["view_queues", "act_on_queues"]
        )
        user.user_permissions.add(*perms)
        return password

    def _start_traffic(
        self, url: str, prefix: str, stop: threading.Event
    ) -> tuple[str, threading.Thread]:
        def run() -> None:
            asyncio.run(run_demo(url, prefix=prefix, stop=stop))

        thread = threading.Thread(target=run, name="echomq-demo", daemon=True)
        thread.start()
        return f"running (prefix {prefix!r})", thread

    def _serve(self, host: str, port: int, banner: Callable[[int], str]) -> None:
        """Serve until stopped; the banner is printed once the server listens,
        with the port it got (``--port 0``: any free one), so its URL answers."""
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        from dashboard.asgi import application

        # The banner says where the server listens; daphne's start-up lines
        # (INFO, which the settings' LOGGING passes) would only repeat it in a
        # terminal that stays quiet while the demo runs. Its warnings and
        # errors still show.
        logging.getLogger("daphne").setLevel(logging.WARNING)

        def listening() -> None:
            ports = [bound for _, bound in server.listening_addresses]
            self.stdout.write(banner(ports[0] if ports else port))
            # Piped or logged, stdout is block-buffered: the login must show now.
            self.stdout.flush()

        endpoints = build_endpoint_description_strings(host=host, port=port)
        server = Server(application, endpoints=endpoints, verbosity=0, ready_callable=listening)
        server.run()
