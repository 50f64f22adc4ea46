"""Static files under hashed names once ``collectstatic`` has run.

With ``STATIC_ROOT`` set (docs/deploy.md: nginx serves the collected files),
``collectstatic`` writes each file also under a name holding its hash and a
manifest; pages then name those, so a browser may keep each for ever and a
release can never mix one version's modules with another's. The page scripts
are ES modules that import each other by relative path (static/dashboard/):
their import statements are rewritten to the hashed names too. Django's own
option for that (``support_js_module_import_aggregation``) reads every .js
file, and misreads minified third-party code (htmx's) as imports of files
that do not exist; this reads only the app's modules. Before the first
``collectstatic`` a name has no manifest entry and stays as it is (WhiteNoise
serves it from the app's own files).
"""

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
