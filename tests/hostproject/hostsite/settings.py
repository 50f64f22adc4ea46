"""A Django project that is not ours, mounting the EchoMQ dashboard app.

What it must write to do so is what docs/mounting.md
says, and no more: INSTALLED_APPS, MIDDLEWARE, the URL include, the socket
route (asgi.py) and REDIS_URL. Everything else is its own: a
custom user model with its own login page (people), its own "api" namespace,
its own base.html and 404.html, database sessions, Django's own ASGI handler,
static files collected and served by WhiteNoise.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = "host-project-test-key-not-for-production"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "people",
    # The dashboard, and django-htmx for its template tag and script.
    "django_htmx",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # The dashboard's: JSON errors under its API, 503 while its Redis is away.
    "dashboard.core.errors.ErrorAnswersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "hostsite.urls"
ASGI_APPLICATION = "hostsite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["HOST_DB"],
    }
}

AUTH_USER_MODEL = "people.Person"
LOGIN_URL = "people:sign_in"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "people:sign_in"

# The dashboard's settings (dashboard.core.conf): only what differs from the defaults.
REDIS_URL = os.environ["REDIS_URL"]
ECHOMQ_LOGOUT_URL = "people:sign_out"

STATIC_URL = "/static/"
STATIC_ROOT = os.environ["HOST_STATIC_ROOT"]

USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
