from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from django.views.generic import TemplateView


def ping(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"host": "pong"})


urlpatterns = [
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    # The project's own API namespace, beside the dashboard's (dashboard:api).
    path("api/", include(([path("ping/", ping, name="ping")], "api"))),
    path("people/", include("people.urls")),
    path("ops/queues/", include("dashboard.urls")),
]
