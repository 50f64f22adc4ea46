"""Every error answer, in one place: JSON under the API (``{"error": {"code",
"message"}}``, Django's own refusals and crashes included), a page elsewhere.
Redis unreachable is a 503 ("redis_failing_over" behind Sentinel), an ACL
refusal (NOPERM) a 403 naming it. "Under the API" is asked of the URL resolver
(the ``dashboard:api`` namespace), so it holds under any mount and leaves a
project's own answers alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from http import HTTPStatus

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import Resolver404, resolve
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from dashboard.core import answers
from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.redis import failing_over
from queues.errors import is_no_permission
from queues.read.refs import DEFAULT_CONNECTION

log = logging.getLogger("echomq.http")

# The application namespaces of the app and of its API (dashboard.urls).
APP_NAMESPACE = "dashboard"
API_NAMESPACE = "dashboard:api"
# A page that could not reach Redis reloads itself this often (seconds).
RETRY_AFTER_S = 5
# What the API says when Django, not one of our views, refused a request.
_CODES = {
    400: ("bad_request", "The request could not be read"),
    403: ("forbidden", "Not allowed"),
    404: ("not_found", "No such API endpoint"),
    405: ("method_not_allowed", "This method is not allowed here"),
    413: ("body_too_large", "The request body is too large"),
    500: ("server_error", "Something went wrong on the server; it has been logged"),
}


def json_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse(
        answers.Error(error=answers.ErrorDetail(code=code, message=message)), status=status
    )


def _inside(app_names: Sequence[str | None], namespace: str) -> bool:
    """Whether a chain of application namespaces enters ``namespace`` ("a:b")
    (a project may nest the app's include inside namespaces of its own)."""
    return f":{namespace}:" in f":{':'.join(name for name in app_names if name)}:"


def is_api_path(path_info: str) -> bool:
    """Whether the URL resolver places ``path_info`` inside the app's API,
    as an endpoint or as an unknown path below the API's root."""
    try:
        match = resolve(path_info)
    except Resolver404 as missing:
        # Each entry is a chain of patterns tried (resolvers, then the last); one
        # that went on inside the API's resolver means the path was below its root.
        tried = missing.args[0].get("tried", []) if missing.args else []
        return any(
            _inside([step.app_name for step in chain[:-1]], API_NAMESPACE) for chain in tried
        )
    return _inside(match.app_names, API_NAMESPACE)


def is_api_request(request: HttpRequest) -> bool:
    match = request.resolver_match
    if match is not None:
        return _inside(match.app_names, API_NAMESPACE)
    return is_api_path(request.path_info)


def _api_error(request: HttpRequest, response: HttpResponseBase) -> JsonResponse:
    status = response.status_code
    code, message = _CODES.get(status, ("", ""))
    if not code:
        try:
            message = HTTPStatus(status).phrase
        except ValueError:
            message = f"HTTP {status}"
        code = message.lower().replace(" ", "_").replace("-", "_")
    if status == 405:
        message = f"{request.method} is not allowed here; allowed: {response.get('Allow', '')}"
    answer = json_error(status, code, message)
    for header in ("Allow", "Retry-After"):
        if header in response:
            answer[header] = response[header]
    return answer


def redis_unavailable(request: HttpRequest) -> HttpResponse:
    """503: the API's JSON error, or a page that says so and reloads itself."""
    # A read changed nothing; a command cut off mid-way may have run or not.
    reading = request.method in ("GET", "HEAD")
    # The Redis connection the request's view served (its URL names it, or the default).
    match = request.resolver_match
    connection = match.kwargs.get("connection") if match is not None else None
    failover = failing_over(connection if isinstance(connection, str) else DEFAULT_CONNECTION)
    described = failover.describe() if failover is not None else ""  # never empty
    if is_api_request(request):
        said = f"Redis is failing over ({described})" if described else "Redis unreachable"
        message = f"{said}: try again in {RETRY_AFTER_S} seconds."
        if not reading:
            message += " The action may or may not have run: look before repeating it."
        code = "redis_failing_over" if described else "redis_unavailable"
        answer: HttpResponse = json_error(503, code, message)
    else:
        context = {"retry_after": RETRY_AFTER_S, "reading": reading, "failover": described}
        answer = render(request, "dashboard/redis_unavailable.html", context, status=503)
    answer["Retry-After"] = str(RETRY_AFTER_S)
    return answer


def redis_refused(request: HttpRequest, error: Exception) -> HttpResponse:
    """403: Redis refused a command for the dashboard's Redis user (its ACL),
    said in words: JSON under the API, a page elsewhere."""
    said = str(error).split(" script: ", 1)[0].strip()
    message = (
        "Redis refused a command this needs: the dashboard's Redis user is not allowed it "
        f"({said}). Grant it in the user's ACL (docs/deploy.md, 'ACL users')."
    )
    if request.method not in ("GET", "HEAD"):
        message += " The action may have stopped part-way: look before repeating it."
    if is_api_request(request):
        return json_error(403, "redis_no_permission", message)
    return render(request, "dashboard/redis_refused.html", {"message": message}, status=403)


class ErrorAnswersMiddleware:
    """Turns a Redis outage into a 503, and any error Django answered under the
    API as HTML (or with no body) into the API's JSON error; a redirect there
    (a path without its final slash) gets a JSON body too.

    Installed above everything that can fail, so it sees every error answer;
    a successful answer costs one comparison.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if (
            response.status_code < 300
            or response.get("Content-Type", "").startswith("application/json")
            or not is_api_request(request)
        ):
            return response
        if response.status_code >= 400:
            return _api_error(request, response)
        # APPEND_SLASH's redirect (a path without its final slash) is HTML.
        location = response.get("Location", "")
        answer = JsonResponse({"redirect": location}, status=response.status_code)
        answer["Location"] = location
        return answer

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        # Only the app's views (pages or API): a project's own Redis is not the queues' Redis.
        match = request.resolver_match
        if match is None or not _inside(match.app_names, APP_NAMESPACE):
            return None
        # BusyLoadingError (Redis loading its data after a restart) is a ConnectionError too.
        if isinstance(exception, RedisConnectionError | RedisTimeoutError):
            log.warning("Redis unreachable while serving %s: %s", request.path, exception)
            return redis_unavailable(request)
        if is_no_permission(exception):
            log.warning("Redis refused a command while serving %s: %s", request.path, exception)
            return redis_refused(request, exception)
        return None


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the reason in the API's JSON, or our 403 page."""
    # Django's reasons are sentences with their own full stop; ours follows.
    reason = reason.rstrip(".")
    if is_api_request(request):
        message = (
            f"CSRF check failed: {reason}. Send the csrftoken cookie's value in the "
            "X-CSRFToken header (and a Referer or Origin of this site over HTTPS)."
        )
        return json_error(403, "csrf_failed", message)
    message = (
        "This form expired or came from another site, so nothing was done "
        f"(CSRF check failed: {reason}). Reload the page and try again."
    )
    return render(request, "403.html", {"exception": message}, status=403)


def _page(template: str, status: int, request: HttpRequest, exception: Exception) -> HttpResponse:
    # Django's own handlers re-run the CSRF check to set up the token, which
    # reads the body: a broken multipart body then turned a 404 into a 500.
    # The token is there already (CsrfViewMiddleware ran before resolving).
    message = exception.args[0] if exception.args and isinstance(exception.args[0], str) else ""
    return render(request, template, {"exception": message}, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400; a body over DATA_UPLOAD_MAX_MEMORY_SIZE is a 413, not a 400."""
    if isinstance(exception, RequestDataTooBig):
        response = HttpResponse(b"Request body too large", status=413)
        response["Content-Type"] = "text/plain; charset=utf-8"
        return response
    return _page("400.html", 400, request, exception)


# handler403 and handler404.
permission_denied = partial(_page, "403.html", 403)
page_not_found = partial(_page, "404.html", 404)
