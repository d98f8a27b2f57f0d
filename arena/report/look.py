"""Arena's one stylesheet (static/arena.css), for every page a person reads: the report of `arena run`
inlines it, so that its folder reads alone; the class server serves it as a static file (settings.py names
this folder). One file, so that the two read as one site and a rule is changed in one place."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from markupsafe import Markup

STATIC = Path(__file__).resolve().parent / "static"  # the class server's static folder
SHEET = "arena.css"


@cache
def stylesheet() -> Markup:
    """The stylesheet's text, as CSS to put in a page's <style>."""
    return Markup((STATIC / SHEET).read_text(encoding="utf-8"))
