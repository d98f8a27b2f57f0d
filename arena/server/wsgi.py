"""The WSGI application gunicorn serves (settings from the environment `arena serve` sets)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.server.settings")
application = get_wsgi_application()
