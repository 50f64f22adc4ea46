from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, register_converter

from dashboard import accounts, api, openapi, views
from dashboard.converters import SegmentConverter

register_converter(SegmentConverter, "segment")

_queue = "queues/<segment:prefix>/<segment:name>/"

page_patterns: list[URLPattern | URLResolver] = [
    path("", views.overview, name="overview"),
    path(_queue, views.queue_page, name="queue"),
    path(_queue + "events/", views.events_page, name="events"),
    path(_queue + "goto/", views.goto_job, name="goto"),
    path(_queue + "actions/", views.job_actions, name="job_actions"),
    path(_queue + "bulk/", views.queue_actions, name="queue_actions"),
    # Last: a job id may contain '/', so it takes the rest of the path.
    path(_queue + "job/<path:job_id>", views.job_page, name="job"),
    path("login/", accounts.login, name="login"),
    path("logout/", accounts.logout, name="logout"),
]

api_patterns: list[URLPattern | URLResolver] = [
    path("queues/", api.queues, name="queues"),
    path("schema/", openapi.schema, name="schema"),
    path(_queue, api.queue, name="queue"),
    path(_queue + "jobs/", api.jobs, name="jobs"),
    path(_queue + "events/", api.events, name="events"),
    path(_queue + "actions/", api.job_actions, name="job_actions"),
    path(_queue + "bulk/", api.queue_actions, name="queue_actions"),
    path(_queue + "job/<path:job_id>", api.job, name="job"),
]

urlpatterns: list[URLPattern | URLResolver] = [
    path("api/", include((api_patterns, "api"))),
    path("", include((page_patterns, "dashboard"))),
]

# Error answers Django gives itself: JSON under the API, pages elsewhere
# (dashboard.errors; the other codes are turned into JSON by its middleware).
handler400 = "dashboard.errors.bad_request"
handler403 = "dashboard.errors.permission_denied"
handler404 = "dashboard.errors.page_not_found"
