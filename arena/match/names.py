"""A bot's name as people read it: on the leaderboard `grееdy` (with Cyrillic е) and `greedy` are one name.

Names may use letters of any script, so a whole-Cyrillic or whole-Greek name is welcome; what is refused is a
name that mixes scripts (beyond those written together: Japanese, Chinese, Korean with Latin, as Unicode's
TR39 'highly restrictive' level allows) and a name that looks like another's: two names are the same bot when
equal after NFKC and case folding, and look alike when their TR39 skeletons are equal. The scripts and the
confusables are Unicode's own data as the confusable-homoglyphs package ships it (Scripts.txt and
confusables.txt), not a table of arena's.
"""

from __future__ import annotations

import functools
import unicodedata

# Scripts a name may mix (TR39 section 5.2, highly restrictive), besides those every name may use.
_TOGETHER = (
    {"LATIN", "HAN", "HIRAGANA", "KATAKANA"},
    {"LATIN", "HAN", "BOPOMOFO"},
    {"LATIN", "HAN", "HANGUL"},
)
_ANY = {"COMMON", "INHERITED"}  # digits, _ . + -, combining marks
_MARKS = str.maketrans("", "", "\u200e\u200f")  # the data wraps right-to-left letters in direction marks


def normal(name: str) -> str:
    """The name as arena keeps it: NFC, so that a folder named on a Mac (NFD) is the same name."""
    return unicodedata.normalize("NFC", name)


def key(name: str) -> str:
    """Two names with one key are one bot (`Greedy` and `greedy`, `ｇreedy` and `greedy`)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def scripts(name: str) -> set[str]:
    """The scripts a name is written in, those every name may use left out."""
    from confusable_homoglyphs import categories  # its data is read on import: not for every arena command

    return {categories.alias(c) for c in name} - _ANY


def mixed(name: str) -> str | None:
    """The scripts a name mixes that are not written together ('CYRILLIC and LATIN'), or None."""
    if name.isascii():
        return None
    used = scripts(name)
    if len(used) <= 1 or any(used <= together for together in _TOGETHER):
        return None
    return " and ".join(sorted(used))


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each confusable character -> the prototype of its class (TR39 confusables.txt), from the package's
    data, which lists for a character its prototype, or for a prototype every character that maps to it."""
    from confusable_homoglyphs import confusables

    parent: dict[str, str] = {}

    def root(c: str) -> str:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    multi: dict[str, str] = {}
    for entry, found in confusables.confusables_data.items():
        char = entry.translate(_MARKS)
        glyphs = [d["c"].translate(_MARKS) for d in found]
        if len(char) != 1:
            continue
        if len(glyphs) == 1 and len(glyphs[0]) > 1:
            multi[char] = glyphs[0]  # m -> rn: a prototype of more than one character
            continue
        for glyph in glyphs:
            if len(glyph) == 1:
                a, b = root(char), root(glyph)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    mapped = {c: root(c) for c in [*parent, *parent.values()]}
    for char, prototype in multi.items():
        mapped[char] = "".join(mapped.get(g, g) for g in prototype)
    return mapped


def skeleton(name: str) -> str:
    """TR39's skeleton: names whose skeletons are equal look alike (`grееdy`, `greedy`; `rnybot`, `mybot`)."""
    table = _prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", name))
    return unicodedata.normalize("NFD", mapped)
