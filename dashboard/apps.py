from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "EchoMQ Dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from django.contrib.auth.signals import user_logged_in, user_logged_out
        from django.core import checks
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from dashboard.checks import check_project
        from dashboard.core.permissions import permission_answers
        from dashboard.core.short_cache import users

        checks.register(check_project)

        # Any change to who holds which permission invalidates cached answers,
        # and so does any change to a user (active flag, password) their
        # cached user objects.
        user_model = get_user_model()
        for clear in (permission_answers.clear, users.clear):
            for signal in (user_logged_in, user_logged_out, m2m_changed):
                signal.connect(clear)
            for model in (user_model, Group):
                post_save.connect(clear, sender=model)
                post_delete.connect(clear, sender=model)
