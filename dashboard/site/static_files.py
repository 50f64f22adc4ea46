"""Collected static files under hashed names (STATIC_ROOT set: docs/deploy.md),
the page modules' imports of each other rewritten to them, so a page never mixes
two releases' modules. Django's own switch for that rewrite reads every .js file
and misreads minified htmx; this reads only ours. Not yet collected: plain names."""

from __future__ import annotations

from django.contrib.staticfiles.storage import ManifestStaticFilesStorage


class HashedStaticFiles(ManifestStaticFilesStorage):
    patterns = (
        *ManifestStaticFilesStorage.patterns,
        (
            "dashboard/*.js",
            (
                (
                    r"""(?P<matched>import(?P<names>\s*\{[^}]*\}\s*)from\s*"(?P<url>\./[\w.-]+\.js)";)""",
                    """import%(names)sfrom "%(url)s";""",
                ),
            ),
        ),
    )

    def stored_name(self, name: str) -> str:
        try:
            return str(super().stored_name(name))
        except ValueError:  # not collected (yet): the plain name
            return name
