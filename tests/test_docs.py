"""The docs cannot go stale unseen: CONTRIBUTING.md's layout table names every module under arena/ and
nothing else, in the layers' order; every guide in docs/ is linked from the README and listed in
docs/index.md; every relative link (and its #anchor) in the README, CONTRIBUTING.md and the guides resolves.

The README's layout table once named a module that had become a package of ten and left out twenty others:
a table checked by hand is a table that drifts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_layers import LAYERS, layer

ROOT = Path(__file__).resolve().parent.parent
ARENA = ROOT / "arena"
GUIDES = sorted((ROOT / "docs").glob("*.md"))
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *GUIDES]

# Named by their folder alone: Django's generated migrations, and the starters `arena new` copies (templates,
# not modules of the design).
WHOLE_FOLDERS = ("arena/server/migrations/", "arena/student/starters/")


def layout_rows() -> list[tuple[str, str]]:
    """(layer cell, path) for each row of CONTRIBUTING.md's layout table, in order."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("\n## The layout\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and (found := re.fullmatch(r"`(arena/[^`]*)`", cells[1])):
            rows.append((cells[0], found.group(1)))
    return rows


def covers(named: str) -> set[str]:
    """The module files (relative paths) one row names; empty if it names nothing there."""
    path = ROOT / named
    if named.endswith("/"):
        if named in WHOLE_FOLDERS:
            return {p.relative_to(ROOT).as_posix() for p in path.rglob("*.py")}
        init = path / "__init__.py"
        return {init.relative_to(ROOT).as_posix()} if init.is_file() else set()
    return {named} if named.endswith(".py") and path.is_file() else set()


def module_name(named: str) -> str:
    return named.removesuffix("/").removesuffix(".py").replace("/", ".")


ROWS = layout_rows()


def test_the_layout_table_names_every_module_once_and_nothing_else() -> None:
    tree = {p.relative_to(ROOT).as_posix() for p in ARENA.rglob("*.py")}
    assert len(ROWS) > 100, "CONTRIBUTING.md's layout table was not found, or lost its rows"
    named: list[str] = []
    for _, path in ROWS:
        found = covers(path)
        assert found, f"CONTRIBUTING.md's layout table names {path}, which is not a module or package"
        named += sorted(found)
    twice = sorted({n for n in named if named.count(n) > 1})
    assert not twice, f"named twice in the layout table: {twice}"
    missing = sorted(tree - set(named))
    assert not missing, f"modules missing from CONTRIBUTING.md's layout table: {missing}"


def test_the_layout_table_runs_up_the_layers_in_their_order() -> None:
    """Each row's layer as tests/test_layers.py gives it, the layer cell where a layer starts, and the
    top-level packages in LAYERS' order within their layer."""
    current = -1
    for cell, path in ROWS:
        level = layer(module_name(path))
        if cell:
            assert cell.split()[0] == str(level), f"{path} opens layer {cell!r}, but it is in layer {level}"
            assert level > current, f"layer {cell!r} opens twice, or out of order, at {path}"
            current = level
        assert level == current, f"{path} (layer {level}) is listed under layer {current}"
    tops = [".".join(module_name(p).split(".")[:2]) for _, p in ROWS]
    runs = [t for i, t in enumerate(tops) if i == 0 or tops[i - 1] != t]
    assert runs == sorted(LAYERS, key=LAYERS.__getitem__), "the table's packages are not in LAYERS' order"


def test_every_guide_is_linked_from_the_readme_and_listed_in_the_index() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert GUIDES, "no guides in docs/"
    for guide in GUIDES:
        assert f"](docs/{guide.name}" in readme, f"README.md does not link docs/{guide.name}"
        if guide.name != "index.md":
            assert f"]({guide.name}" in index, f"docs/index.md does not list {guide.name}"


def without_code(text: str) -> str:
    """The text with fenced blocks, indented blocks and inline code taken out (links there are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"^(?: {4}|\t).*$", "", text, flags=re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """The anchor GitHub (and most forges, and MkDocs' toc with its GitHub slugs) give a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def links(path: Path) -> list[str]:
    text = without_code(path.read_text(encoding="utf-8"))
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for link in links(doc):
        if re.match(r"[a-z]+:", link):
            continue  # https:, mailto:
        target, _, anchor = link.partition("#")
        file = (doc.parent / target).resolve() if target else doc
        if not file.exists():
            broken.append(f"{link} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{link} (no heading #{anchor} in {file.relative_to(ROOT)})")
    assert not broken, f"{doc.relative_to(ROOT)}: broken links: {broken}"


@pytest.mark.parametrize("doc", [p for p in DOCS if p.name != "README.md"], ids=lambda p: p.name)
def test_a_guides_contents_list_every_section(doc: Path) -> None:
    """A section added to a guide (the guides grow a section per topic) is listed where the reader starts."""
    text = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.S | re.M)
    head = text.split("\n## ", 1)[0]
    listed = re.findall(r"^- \[.*\]\(#([^)]+)\)$", head, flags=re.M)
    if not listed:
        return  # a page short enough to need no contents (docs/index.md)
    sections = [slug(h) for h in re.findall(r"^## (.+)$", text, flags=re.M)]
    assert listed == sections, f"{doc.name}: its contents list {listed}, its sections are {sections}"


def test_the_slugs_are_the_forges() -> None:
    """The anchor check would pass vacuously if slug() made the anchors the docs link to from any heading."""
    assert slug("The class's server: joining") == "the-classs-server-joining"
    assert slug("A new bot: `arena new`") == "a-new-bot-arena-new"
    assert slug('What "settled" promises') == "what-settled-promises"
    assert "no-such-heading" not in anchors(ROOT / "README.md")
