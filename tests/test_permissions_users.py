"""Who may view, checked with the users a host project really has: a
non-staff employee who was granted ``view_queues``, an employee who left
(inactive) on a site whose backend still lets inactive users log in, and a
viewer posting to a view of the host's own guarded with the view-only
decorator. Each condition of ``dashboard.core.permissions`` is what refuses one
of them (issue 26: dropping any one of them passed every other test)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory
from redis import Redis

from dashboard.core import short_cache
from dashboard.core.permissions import (
    VIEW_PERMISSION,
    api_permission,
    can_view,
    page_permission,
    permission_answers,
)
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

KEYS = QueueRef("bull", "invoices").keys
PAGE = "/queues/bull/invoices/"
API = "/api/queues/bull/invoices/"

pytestmark = pytest.mark.django_db


def _employee(username: str, *, staff: bool, active: bool = True, acts: bool = False) -> User:
    user = User.objects.create_user(
        username, email=f"{username}@acme-payments.example", password=None, is_staff=staff
    )
    user.is_active = active
    user.save()
    codenames = ["view_queues", *(["act_on_queues"] if acts else [])]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


def _logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def invoices(dashboard_redis: Redis) -> Redis:
    seed_job(
        dashboard_redis,
        KEYS,
        "inv-2024-000871",
        state="failed",
        name="render-invoice-pdf",
        data={"invoice": "INV-2024-000871", "customer": "cus_Q8xK2mB9"},
        fields={"failedReason": "wkhtmltopdf exited with code 1: Exit with code 1 due to network"},
    )
    return dashboard_redis


def test_a_non_staff_employee_holding_view_queues_is_refused(invoices: Redis) -> None:
    """Support staff are granted view_queues by a group, but only staff may
    reach an admin dashboard: the permission alone does not let them in."""
    client = _logged_in(_employee("maria.support", staff=False))
    assert client.get(PAGE).status_code == 403
    assert client.get(f"{PAGE}job/inv-2024-000871").status_code == 403
    answer = client.get(API)
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "forbidden"
    assert "staff" in answer.json()["error"]["message"]
    # The same employee made staff gets in: staff is the only thing missing.
    promoted = User.objects.get(username="maria.support")
    promoted.is_staff = True
    promoted.save()
    assert client.get(PAGE).status_code == 200


class OnCallRotaBackend:
    """A host's backend granting the dashboard's permissions to whoever is on
    the on-call rota (kept in the company directory), as SSO setups do: it
    answers has_perm without asking whether the account is still active."""

    ROTA = {"j.okafor"}

    def authenticate(self, request: Any, **credentials: Any) -> None:
        return None

    def get_user(self, user_id: int) -> None:
        return None

    def has_perm(self, user: Any, permission: str, obj: Any = None) -> bool:
        return user.get_username() in self.ROTA and permission.startswith("dashboard.")


def test_an_inactive_employee_is_refused_whatever_grants_them_permissions(
    invoices: Redis, settings: Any
) -> None:
    """Django's AllowAllUsersModelBackend keeps a deactivated user's session
    valid (a host picks it to tell them why they cannot log in), and a rota
    backend still grants them the permissions: the dashboard must refuse
    someone whose account was switched off all the same."""
    settings.AUTHENTICATION_BACKENDS = [
        "django.contrib.auth.backends.AllowAllUsersModelBackend",
        f"{__name__}.OnCallRotaBackend",
    ]
    leaver = User.objects.create_user("j.okafor", password=None, is_staff=True, is_active=False)
    client = _logged_in(leaver)
    assert client.get(PAGE).status_code == 403
    answer = client.get(API + "jobs/?state=failed")
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "forbidden"
    retried = client.post(API + "actions/", {"action": "retry", "ids": ["inv-2024-000871"]})
    assert retried.status_code == 403
    assert invoices.zscore(KEYS.failed, "inv-2024-000871") is not None
    # The very same account, active again, is let in: only is_active refused it.
    leaver.is_active = True
    leaver.save()
    assert client.get(PAGE).status_code == 200


# A host's own view, mounted beside the dashboard and guarded by the
# view-only decorators: it changes something when posted to.
def _reindex(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return HttpResponse("reindexed", status=202)
    return HttpResponse("index status: fresh")


def _as(view: Any, method: str, user: User) -> HttpResponse:
    request = getattr(RequestFactory(), method)("/reindex/")
    request.user = user
    response: HttpResponse = view(request)
    return response


def test_a_viewer_posting_to_a_view_only_page_is_refused() -> None:
    """Every POST acts, whatever the view says it needs: a viewer may read
    the view-only page, not post to it; an actor may do both."""
    view = page_permission()(_reindex)
    viewer = _employee("ops.viewer", staff=True)
    assert _as(view, "get", viewer).status_code == 200
    with pytest.raises(PermissionDenied, match="act_on_queues"):
        _as(view, "post", viewer)
    assert _as(view, "post", _employee("ops.actor", staff=True, acts=True)).status_code == 202


def test_a_viewer_posting_to_a_view_only_api_endpoint_gets_a_json_403() -> None:
    view = api_permission()(_reindex)
    viewer = _employee("ops.viewer", staff=True)
    assert _as(view, "get", viewer).status_code == 200
    refused = _as(view, "post", viewer)
    assert refused.status_code == 403
    assert "act_on_queues" in refused.content.decode()
    assert _as(view, "post", _employee("ops.actor", staff=True, acts=True)).status_code == 202


# A host's user model signed in by e-mail, with permissions but no staff flag
# (AbstractBaseUser + PermissionsMixin, as tests/hostproject/people.Person),
# and one with no permissions at all (AbstractBaseUser alone): their users as
# the request carries them.
class EmailPerson:
    is_authenticated = True
    is_active = True

    def __init__(self, pk: int, email: str, permissions: set[str]) -> None:
        self.pk = pk
        self.email = email
        self.permissions = permissions

    def get_username(self) -> str:
        return self.email

    def has_perm(self, permission: str) -> bool:
        return permission in self.permissions


class PasswordOnlyPerson:
    is_authenticated = True
    is_active = True
    pk = 12

    def get_username(self) -> str:
        return "kiosk@acme-payments.example"


def test_a_user_model_without_a_staff_flag_leaves_the_decision_to_the_permission() -> None:
    permission_answers.clear()
    assert can_view(EmailPerson(41, "ana@acme-payments.example", {VIEW_PERMISSION}))
    assert not can_view(EmailPerson(42, "bo@acme-payments.example", set()))


def test_a_user_model_without_permissions_lets_nobody_in() -> None:
    permission_answers.clear()
    assert not can_view(PasswordOnlyPerson())


def test_a_permission_answer_is_kept_for_its_ttl_and_asked_again_after(
    monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    """has_perm costs database queries per request: an answer is kept
    short_cache.TTL_S seconds. A grant taken away by another process
    (no signal here) applies when it lapses, not before."""
    permission_answers.clear()
    clock = [5_000.0]
    monkeypatch.setattr(short_cache.time, "monotonic", lambda: clock[0])
    viewer = _employee("night.oncall", staff=True)
    viewer = User.objects.get(pk=viewer.pk)  # as a request loads it: no cached permissions
    assert can_view(viewer)
    # Another process revokes the grant: a queryset delete sends no m2m signal.
    User.user_permissions.through.objects.filter(user_id=viewer.pk).delete()
    viewer = User.objects.get(pk=viewer.pk)
    clock[0] += short_cache.TTL_S - 0.001
    with django_assert_num_queries(0):
        assert can_view(viewer)  # the kept answer: no query
    clock[0] += 0.001  # exactly the TTL later: lapsed, asked again
    assert not can_view(viewer)


def test_the_read_only_note_shows_only_on_a_read_only_dashboard(
    invoices: Redis, settings: Any
) -> None:
    """Where the action buttons would be, a read-only dashboard says why they are
    off; a dashboard that acts shows its buttons and no such note."""
    client = _logged_in(_employee("j.okafor", staff=True, acts=True))
    note = "The dashboard is read-only (ECHOMQ_READ_ONLY): actions are turned off."
    for path in (f"{PAGE}?state=failed", f"{PAGE}job/inv-2024-000871"):
        acting = client.get(path).content.decode()
        assert note not in acting, path
        assert 'value="retry"' in acting, path
    settings.ECHOMQ_READ_ONLY = True
    for path in (f"{PAGE}?state=failed", f"{PAGE}job/inv-2024-000871"):
        reading = client.get(path).content.decode()
        assert note in reading, path
        assert 'value="retry"' not in reading, path
