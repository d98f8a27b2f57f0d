"""What a page that shows the report's parts once loaded for their style. The style is now the site's one
stylesheet (arena/report/look.py), which every page links in base.html: `report_style` stays so that a
template written before still renders, and adds nothing."""

from __future__ import annotations

from django import template
from markupsafe import Markup

register = template.Library()


@register.simple_tag
def report_style() -> Markup:
    """Nothing: base.html links the stylesheet the report's parts are drawn in."""
    return Markup("")
