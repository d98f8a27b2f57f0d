"""The report's style for a page that shows the report's parts (arena/report/face.py): one tag, so that
every such page takes it from the report and none keeps a copy."""

from __future__ import annotations

from django import template
from markupsafe import Markup

from arena.report import face

register = template.Library()


@register.simple_tag
def report_style() -> Markup:
    """A <style> of the report's rules, scoped to the page's boxes of class `arena-report`, with what the
    class server's own rules would otherwise change in them."""
    fixes = (
        ".arena-report table{width:auto}.arena-report section{background:none;border:0;padding:0;margin:0}"
        "main:has(.arena-report){max-width:1240px}"  # the report's leaderboard, whole at 1280 px
    )
    return Markup(f"<style>{face.style()}\n{fixes}</style>")


@register.simple_tag
def report_palette() -> Markup:
    """The report's colours and type for the whole page (base.html), so that the two read as one site."""
    return Markup(f":root{{{face.palette()}}}")
