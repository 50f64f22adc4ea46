"""HTTP for the ASGI server: Django's synchronous handler in one pool thread a
request, as under WSGI (Django's ASGI handler crosses threads per middleware
hook), with pools of their own for login POSTs and search steps so neither
starves the pages. Why not a2wsgi or ``WsgiToAsgi``, and what the pools bought:
docs/benchmarks.md ("bench/http_bridges.py", "bench/login_flood.py", "bench/abuse.py").
"""

from __future__ import annotations

import asyncio
import inspect
import io
import math
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.handlers.wsgi import WSGIHandler
from django.http import parse_cookie
from django.urls import Resolver404, resolve

from dashboard.core.errors import is_api_path, json_error

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
_Headers = list[tuple[str, str]]
V = TypeVar("V", bound=Callable[..., Any])
# The dashboard's largest POST is a few hundred job ids; anything near this is abuse.
MAX_BODY_BYTES = 4 * 1024 * 1024
# Logins waiting beyond this are told to come back (each holds its request).
MAX_WAITING_LOGINS = 32
# A step keeps Redis busy up to 60% of its time (queues.read.search.DUTY): one
# thread keeps all of a process's searches to that share.
SEARCH_THREADS = 1
# Steps one session may have admitted: one per search it may run and one more,
# so a new search gets in to replace the oldest. Beyond, 429 at once.
MAX_STEPS_PER_SESSION = 3
# Steps admitted from all sessions at once; beyond, 503 at once.
MAX_WAITING_STEPS = 64
# Marks a view whose requests are search steps (see runs_as_search_step).
_SEARCH_STEP = "echomq_search_step"


def path_info(scope: Scope) -> str:
    """The request's path below the application's mount point (root_path)."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def wsgi_environ(scope: Scope, body: bytes) -> dict[str, Any]:
    # WSGI carries the path as latin-1 text of its UTF-8 bytes.
    script_name = scope.get("root_path", "").encode().decode("latin-1")
    # "https" when the ASGI server says so (daphne --proxy-headers reads
    # X-Forwarded-Proto); Django's SECURE_PROXY_SSL_HEADER is the other way.
    scheme = scope.get("scheme", "http")
    default_port = 443 if scheme == "https" else 80
    server = scope.get("server") or ("localhost", default_port)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path_info(scope).encode().decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or default_port),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        if name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ[name] = value
            continue
        key = "HTTP_" + name
        if key in environ:
            # Repeated headers join with ",", cookies with ";" (RFC 9110, 6265).
            value = environ[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
        environ[key] = value
    # The body is already read in full (chunked uploads included): its true length.
    environ["CONTENT_LENGTH"] = str(len(body))
    return environ


def _run(app: WSGIHandler, environ: dict[str, Any]) -> tuple[int, _Headers, list[bytes]]:
    started: dict[str, Any] = {}

    def start_response(status: str, headers: _Headers, exc_info: Any = None) -> Any:
        started["status"], started["headers"] = status, headers
        return lambda data: None  # the legacy write() callable; Django never uses it

    result: Iterable[bytes] = app(environ, start_response)
    try:
        chunks = list(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return int(started["status"].split(" ", 1)[0]), started["headers"], chunks


async def _answer(send: Send, status: int, headers: _Headers, body: bytes) -> None:
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _refuse(
    send: Send, path_info: str, status: int, code: str, message: str, *, always_json: bool = False
) -> None:
    headers = [("Content-Type", "text/plain; charset=utf-8")]
    body = message.encode()
    if always_json or is_api_path(path_info):
        json_answer = json_error(status, code, message)
        headers, body = [("Content-Type", json_answer["Content-Type"])], json_answer.content
    if status == 503:
        headers.append(("Retry-After", "2"))
    await _answer(send, status, headers, body)


def runs_as_search_step(view: V) -> V:
    setattr(view, _SEARCH_STEP, True)
    return view


def is_search_step(method: str, path_info: str) -> bool:
    # Every search URL ends so (dashboard.urls): resolving costs 40-380 us a
    # path, more than the rest of this bridge, so other paths are not resolved.
    if method != "GET" or not path_info.endswith("/search/"):
        return False
    return bool(getattr(_view_at(path_info), _SEARCH_STEP, False))


def _view_at(path_info: str) -> Any:
    try:
        return resolve(path_info).func
    except Resolver404:
        return None


def session_key(scope: Scope) -> str:
    """Whose search steps these are: the session cookie, else the client's address."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"cookie":
            session = parse_cookie(value.decode("latin-1")).get(settings.SESSION_COOKIE_NAME)
            if session:
                return "session:" + session
    client = scope.get("client") or ("", 0)
    return f"address:{client[0]}"


@dataclass(slots=True)
class Admission:
    """The requests one pool admits, bounded in all and per key (a session's
    search steps), beyond which it refuses them at once (``always_json``: in
    the API's JSON wherever the path). Event loop only: no lock."""

    in_all: float = math.inf
    per_key: float = math.inf
    what: str = ""
    always_json: bool = False
    admitted: dict[str, int] = field(default_factory=dict)
    count: int = 0

    def refusal(self, key: str) -> tuple[int, str, str] | None:
        if self.admitted.get(key, 0) >= self.per_key:
            busy = f"You have {self.per_key} search steps running; ask again when one answers"
            return 429, "search_busy", busy
        if self.count >= self.in_all:
            return 503, "busy", f"Too many {self.what} at once; try again in a few seconds"
        return None

    # A method each way, not a context manager: this runs for every request, and
    # a generator-based one cost 5 us a request, ten times these two (timeit).
    def admit(self, key: str) -> None:
        self.admitted[key] = self.admitted.get(key, 0) + 1
        self.count += 1

    def release(self, key: str) -> None:
        self.count -= 1
        left = self.admitted[key] - 1
        if left:
            self.admitted[key] = left
        else:
            del self.admitted[key]


# Requests the pages' pool serves now: search steps let Redis serve those first.
PAGES_IN_FLIGHT = Admission()


def leave_bodies_to_the_application() -> None:
    """Under daphne, have Twisted leave POST bodies unparsed: it parsed every form
    for nothing and answered one it could not parse with an empty 400 of its own,
    so the API could not answer in JSON. A no-op where Twisted lacks the switch."""
    try:
        from daphne import http_protocol
        from twisted.web.http import Request
    except ImportError:
        return
    if "parsePOSTFormSubmission" not in inspect.signature(Request.__init__).parameters:
        return
    daphne_request: Any = http_protocol.WebRequest
    if getattr(daphne_request, "leaves_bodies_to_the_application", False):
        return

    class BodiesLeftToTheApplication(daphne_request):  # type: ignore[misc]
        leaves_bodies_to_the_application = True

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)

    # daphne's protocol factory names its request class at each connection.
    http_protocol.WebRequest = BodiesLeftToTheApplication


def checks_password(method: str, path_info: str) -> bool:
    """A POST to a Django LoginView, wherever mounted."""
    if method != "POST":
        return False
    view_class = getattr(_view_at(path_info), "view_class", None)
    return isinstance(view_class, type) and issubclass(view_class, LoginView)


class ThreadedDjangoHTTP:
    def __init__(self, threads: int = 8) -> None:
        self.handler = WSGIHandler()
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="django-http")
        # Hashing is CPU work: one thread leaves the other core to the pages.
        self.login_executor = ThreadPoolExecutor(1, thread_name_prefix="django-login")
        self.logins = Admission(MAX_WAITING_LOGINS, what="logins")
        self.search_executor = ThreadPoolExecutor(
            SEARCH_THREADS, thread_name_prefix="django-search"
        )
        # JSON on the page's search URL too: the page reads it as it reads the API.
        self.search_steps = Admission(
            MAX_WAITING_STEPS, MAX_STEPS_PER_SESSION, "searches", always_json=True
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"{type(self).__name__} serves http scopes, not {scope['type']!r}")
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                # Bodies are buffered before Django sees them: bound the memory.
                limit = f"The request body is larger than {MAX_BODY_BYTES:,} bytes"
                await _refuse(send, path_info(scope), 413, "body_too_large", limit)
                return
            if not message.get("more_body", False):
                break
        environ = wsgi_environ(scope, bytes(body))
        method, path = scope["method"], path_info(scope)
        executor, admission, key = self.executor, PAGES_IN_FLIGHT, ""
        if checks_password(method, path):
            executor, admission = self.login_executor, self.logins
        elif is_search_step(method, path):
            executor, admission, key = self.search_executor, self.search_steps, session_key(scope)
        refusal = admission.refusal(key)
        if refusal is not None:
            await _refuse(send, path, *refusal, always_json=admission.always_json)
            return
        admission.admit(key)
        try:
            loop = asyncio.get_running_loop()
            status, headers, chunks = await loop.run_in_executor(
                executor, _run, self.handler, environ
            )
            # Django's WSGI Set-Cookie values start with a space; HTTP allows none.
            await _answer(send, status, [(k, v.strip()) for k, v in headers], b"".join(chunks))
        finally:
            admission.release(key)
