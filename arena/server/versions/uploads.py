"""A request's upload: it streams to a temporary file, one far bigger than any class allows is cut off as
it arrives (the request is marked, and `stored` says "too big" in one line with the class's own, smaller
limit), and it is stored as the student's next version (submitting.py). The page and `arena submit`
upload through `stored`."""

from __future__ import annotations

from typing import Any

from django.core.files.uploadhandler import SkipFile, TemporaryFileUploadHandler
from django.http import HttpRequest

from arena.server.classdir import ClassDir
from arena.server.models import Classroom, Member
from arena.server.versions import submitting
from arena.server.versions.unpack import Rejected

HARD_CAP = 64 << 20  # no class takes more in one upload


class CappedUpload(TemporaryFileUploadHandler):
    def new_file(self, *args: Any, **kwargs: Any) -> None:
        self.received = 0
        super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > HARD_CAP:
            self.request.arena_too_big = True  # type: ignore[union-attr]
            raise SkipFile()
        return super().receive_data_chunk(raw_data, start)


def stored(request: HttpRequest, where: ClassDir, classroom: Classroom, member: Member) -> tuple[str, Any]:
    """Store the request's upload as a version: ('ok', submission) or ('error', one line)."""
    file = request.FILES.get("bot")  # read first: the upload's handler marks one far too big as it reads
    if getattr(request, "arena_too_big", False):
        most = classroom.upload_kib
        return "error", f"upload too big: more than {HARD_CAP >> 20} MiB; this class takes at most {most} KiB"
    if file is None:
        return "error", "choose a file to upload: a bot's source file, or a zip of its folder"
    try:
        found = submitting.submit(where, classroom, member, file.name or "upload", file, file.size or 0)
    except Rejected as e:
        return "error", str(e)
    return "ok", found
