"""Uploads stream to temporary files, and one far bigger than any class allows is cut off as it arrives:
the request is marked and the view says "too big" in one line (the teacher's own, smaller limit is the
view's to check, with the size in its message)."""

from __future__ import annotations

from typing import Any

from django.core.files.uploadhandler import SkipFile, TemporaryFileUploadHandler

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
