"""The class's one Django app: its models, views and templates are the `classroom` app."""

from __future__ import annotations

from django.apps import AppConfig


class ClassroomConfig(AppConfig):
    name = "arena.server"
    label = "classroom"
    verbose_name = "Arena class"
    default_auto_field = "django.db.models.BigAutoField"
