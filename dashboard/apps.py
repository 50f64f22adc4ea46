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
        from dashboard.permissions import clear_permission_cache

        checks.register(check_project)

        # Any change to who holds which permission invalidates cached answers.
        user_model = get_user_model()
        user_logged_in.connect(clear_permission_cache)
        user_logged_out.connect(clear_permission_cache)
        for model in (user_model, Group):
            post_save.connect(clear_permission_cache, sender=model)
            post_delete.connect(clear_permission_cache, sender=model)
        m2m_changed.connect(clear_permission_cache)
