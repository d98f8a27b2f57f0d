"""Django's admin (/admin/, for teachers): the class's tables as they are, for what the pages do not do."""

from __future__ import annotations

from django.contrib import admin

from arena.server.models import Classroom, Member, Submission

admin.site.register(Classroom)
admin.site.register(Member, list_display=("slug", "role", "active"))
admin.site.register(Submission, list_display=("member", "number", "status", "created"))
