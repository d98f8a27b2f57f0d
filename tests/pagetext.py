"""What no person should read on a page, found in its HTML as a browser would show it: the page sweeps
(tests/test_server_sweep.py, the server's every address; tests/test_report_sweep.py, the report's files)
share it. A finding is one line: what was found and the text around it."""

from __future__ import annotations

import html
import re

# Python's own spelling of its data, a template's name, a value that was missing or not a number, a time
# as the machine writes it: each a line of code or a bug reaching a person.
UNREADABLE = (
    (re.compile(r"\[\{'|\{'|<bound |object at 0x"), "a Python repr"),
    (re.compile(r"\bNone\b"), "None"),
    (re.compile(r"\b[Nn]a[Nn]\b"), "nan"),
    (re.compile(r"\b[\w/]+\.html\b|classroom/"), "a template's name"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\d\d:\d\d:\d\d|\+00:00"), "a raw ISO time"),
    (re.compile(r"matches the given query"), "Django's word for a missing row"),
)
ZONED = (re.compile(r"\bUTC\b"), "UTC where the page shows times in the reader's zone")


def visible(page: str) -> str:
    """The text a browser shows of `page` before its scripts run: no script, style or tag, entities read;
    nor what is shown to be typed or read verbatim (code, a command, what a bot wrote: <pre>, <code>), nor
    what only a browser without JavaScript shows (<noscript>)."""
    text = re.sub(r"(?is)<(script|style|template|pre|code|kbd|samp|noscript)\b.*?</\1>", " ", page)
    text = re.sub(r"(?s)<!--.*?-->", " ", text)
    text = re.sub(r"(?s)<[^>]*>", " ", text)
    return html.unescape(re.sub(r"\s+", " ", text))


def title(page: str) -> str:
    found = re.search(r"(?is)<title>(.*?)</title>", page)
    return html.unescape(found.group(1)) if found else ""


def findings(page: str, zoned: bool) -> list[str]:
    """What a person should not read on `page`; `zoned`: its times are shown in the reader's zone by its
    script (a <time class="utc"> each), so a UTC elsewhere in its text is a second copy of a time."""
    said = []
    name = title(page)
    if "<" in name or not name.strip():
        said.append(f"its title is {name[:60]!r}")
    text = visible(page)
    checks = list(UNREADABLE)
    if zoned:
        text = visible(re.sub(r'(?s)<time [^>]*class="utc"[^>]*>.*?</time>', " ", page))
        checks.append(ZONED)
    for pattern, what in checks:
        for hit in pattern.finditer(text):
            said.append(f"{what}: ...{text[max(0, hit.start() - 50) : hit.end() + 50]}...")
            break
    return said
