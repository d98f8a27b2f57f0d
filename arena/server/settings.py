"""Django's settings for one class, from the environment `arena serve` sets for its processes:
ARENA_CLASS_DIR (the class folder), ARENA_DB (a database URL; SQLite in the class folder when unset),
ARENA_HOSTS (the host names the server answers to: the bind address, and localhost for 127.0.0.1),
ARENA_SETTINGS (the games' settings as arena run resolves them, JSON), ARENA_TRUSTED_PROXIES.

DEBUG is off: a student never sees a traceback. Sessions and CSRF cookies are HttpOnly and SameSite; the
pages allow no framing and no sniffing. Uploads stream to temporary files through a capped handler
(uploads.py), so an upload far too big is cut off rather than stored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from arena.report import look
from arena.server.classdir import ClassDir, database
from arena.server.people.throttle import COOL_OFF, FAILURES

CLASS = ClassDir(Path(os.environ.get("ARENA_CLASS_DIR", "class")).absolute())
ARENA_CLASS_DIR = str(CLASS.root)
ARENA_SETTINGS = json.loads(os.environ.get("ARENA_SETTINGS") or "{}")  # arena.tournament.Settings.to_dict()

SECRET_KEY = CLASS.secret_key() if CLASS.root.is_dir() else "not-a-class-folder"
DEBUG = False
ALLOWED_HOSTS = [h for h in os.environ.get("ARENA_HOSTS", "127.0.0.1,localhost").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "arena.server.apps.ClassroomConfig",
    "axes",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]
ROOT_URLCONF = "arena.server.urls"
WSGI_APPLICATION = "arena.server.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "arena.server.views.context.classroom",
            ]
        },
    }
]
DATABASES = {"default": database(os.environ.get("ARENA_DB") or CLASS.database_url(), CLASS)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Argon2id first (Django's recommendation); PBKDF2 reads the hashes made before, upgraded at sign-in.
PASSWORD_HASHERS = ["arena.server.people.hashing.Argon2", "arena.server.people.hashing.PBKDF2"]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/signin"
# One throttle for every way in (throttle.py): axes refuses a username from one address after FAILURES
# failures, for COOL_OFF after the last; the admin's sign-in passes through it as the class's does.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = FAILURES
AXES_COOLOFF_TIME = COOL_OFF
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "arena.server.people.throttle.client_address"
AXES_USERNAME_CALLABLE = "arena.server.people.throttle.username"
AXES_LOCKOUT_CALLABLE = "arena.server.people.throttle.refused"
AXES_DISABLE_ACCESS_LOG = True  # successes need no log of their addresses
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en"
STATIC_URL = "/static/"
STATIC_ROOT = None
STATICFILES_DIRS = [
    str(look.STATIC)
]  # the site's one stylesheet, which the report inlines (arena/report/look.py)
WHITENOISE_USE_FINDERS = True  # the admin's files, served from the installed packages (no collectstatic)
CSRF_FAILURE_VIEW = "arena.server.views.common.csrf_failure"
FILE_UPLOAD_HANDLERS = ["arena.server.versions.uploads.CappedUpload"]
FILE_UPLOAD_PERMISSIONS = 0o600  # the class folder is the server's alone (classdir.py)
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {"django": {"handlers": ["stderr"], "level": "WARNING"}},
}
