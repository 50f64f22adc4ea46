"""The app's URLs, for ``include("dashboard.urls")`` under any prefix.

Names: ``dashboard:<page>``, ``dashboard:api:<endpoint>``, ``dashboard:live``
(the socket's route is built from it). Every queue URL serves the default
Redis connection and has a twin of the same name under ``c/<connection>/``:
``reverse`` picks it by the number of arguments (``queue_urls.queue_args``),
so a dashboard of one server keeps its short URLs. Login and logout are the
project's (dashboard.site_urls for the stand-alone site).
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, register_converter

from dashboard import openapi
from dashboard.browse import api, views
from dashboard.cohorts import views as cohorts
from dashboard.core import connections
from dashboard.core.converters import SegmentConverter
from dashboard.edits import views as edits
from dashboard.error_groups import views as error_groups
from dashboard.flows import views as flows
from dashboard.history import views as history
from dashboard.metrics import prometheus
from dashboard.schedulers import views as schedulers
from dashboard.search import views as search
from dashboard.workers import views as workers

# Converters are one registry for every app: a name of our own.
register_converter(SegmentConverter, "echomq_segment")

app_name = "dashboard"
_queue = "queues/<echomq_segment:prefix>/<echomq_segment:name>/"

page_patterns: list[URLPattern | URLResolver] = [
    path("", views.overview, name="overview"),
    path(_queue, views.queue_page, name="queue"),
    path("history/last-hour/", history.history_summary, name="history_summary"),
    path(_queue + "events/", views.events_page, name="events"),
    path(_queue + "goto/", views.goto_job, name="goto"),
    path(_queue + "actions/", views.job_actions, name="job_actions"),
    path(_queue + "bulk/", views.queue_actions, name="queue_actions"),
    path(_queue + "workers/", workers.workers_page, name="workers"),
    path(_queue + "history/", history.history_fragment, name="history"),
    path(_queue + "concurrency/", workers.global_concurrency_action, name="global_concurrency"),
    path(_queue + "schedulers/", schedulers.page, name="schedulers"),
    path(_queue + "schedulers/actions/", schedulers.page_action, name="scheduler_actions"),
    path(_queue + "errors/", error_groups.groups_page, name="error_groups"),
    path(_queue + "errors/actions/", error_groups.group_action_page, name="error_group_actions"),
    path(_queue + "edit/", edits.edit_job_data, name="edit_job_data"),
    path(_queue + "duplicate/", edits.duplicate_job, name="duplicate_job"),
    path(_queue + "add/", edits.add_job, name="add_job"),
    path(_queue + "search/", search.page_search, name="search"),
    path(_queue + "cohorts/", cohorts.panel, name="cohorts"),
    path(_queue + "cohorts/<str:cohort_id>/", cohorts.cohort_page, name="cohort"),
    path("ws/live/", views.live_socket_over_http, name="live"),
    # Prometheus' customary path, without a slash; a bearer token, no login.
    path("metrics", prometheus.metrics, name="metrics"),
    path(_queue + "flow-children/<path:job_id>", flows.flow_children, name="flow_children"),
    # Last: a job id may contain '/', so it takes the rest of the path.
    path(_queue + "job/<path:job_id>", views.job_page, name="job"),
]

api_patterns: list[URLPattern | URLResolver] = [
    path("queues/", api.queues, name="queues"),
    path("schema/", openapi.schema, name="schema"),
    path(_queue, api.queue, name="queue"),
    path(_queue + "jobs/", api.jobs, name="jobs"),
    path(_queue + "events/", api.events, name="events"),
    path(_queue + "actions/", api.job_actions, name="job_actions"),
    path(_queue + "bulk/", api.queue_actions, name="queue_actions"),
    path(_queue + "flow/<path:job_id>", flows.api_flow, name="flow"),
    path(_queue + "flow-children/<path:job_id>", flows.api_flow_children, name="flow_children"),
    path(_queue + "workers/", workers.workers_json, name="workers"),
    path(_queue + "limits/", workers.limits_json, name="limits"),
    path(_queue + "concurrency/", workers.global_concurrency_json, name="global_concurrency"),
    path(_queue + "schedulers/", schedulers.api_list, name="schedulers"),
    path(_queue + "schedulers/actions/", schedulers.api_action, name="scheduler_actions"),
    path(_queue + "errors/", error_groups.api_groups, name="error_groups"),
    path(_queue + "errors/actions/", error_groups.api_group_action, name="error_group_actions"),
    path(_queue + "errors/<str:group>/jobs/", error_groups.api_group_jobs, name="error_group_jobs"),
    path(_queue + "edit/", edits.api_edit_job_data, name="edit_job_data"),
    path(_queue + "duplicate/", edits.api_duplicate_job, name="duplicate_job"),
    path(_queue + "add/", edits.api_add_job, name="add_job"),
    path(_queue + "search/", search.api_search, name="search"),
    path(_queue + "search/act/", search.api_act, name="search_act"),
    path(_queue + "cohorts/", cohorts.api_list, name="cohorts"),
    path(_queue + "cohorts/<str:cohort_id>/", cohorts.api_one, name="cohort"),
    path(_queue + "job/<path:job_id>", api.job, name="job"),
]


def with_connections(patterns: list[URLPattern | URLResolver]) -> list[URLPattern | URLResolver]:
    """``patterns``, then each queue URL again under ``c/<connection>/`` (same name)."""
    twins: list[URLPattern | URLResolver] = [
        path(
            "c/<echomq_segment:connection>/" + str(pattern.pattern),
            connections.on_connection(pattern.callback),
            name=pattern.name,
        )
        for pattern in patterns
        if isinstance(pattern, URLPattern) and str(pattern.pattern).startswith(_queue)
    ]
    return [*patterns, *twins]


urlpatterns: list[URLPattern | URLResolver] = [
    # Nested: a project's own "api" namespace stays its own.
    path("api/", include((with_connections(api_patterns), "api"))),
    *with_connections(page_patterns),
]
