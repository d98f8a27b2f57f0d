"""The ladder's field as a bots folder arena reads like any other: each student's active version copied
in under their bot's name, and the reference bots the teacher added. Written by the ladder worker only
(between runs, so no run reads a half-made folder), from what the database says should be there; a file
beside the folder (CLASS_DIR/bots.json) remembers which version each entry is, so an unchanged entry is
not copied again. The final's frozen field is the same copy, made once, at the deadline.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from arena.server.classdir import ClassDir
from arena.server.models import Classroom, Member, Role, Status

Wanted = dict[str, tuple[str, Path]]  # bot name -> (what it is, e.g. "v3 #17" or "reference", its source)


def wanted(where: ClassDir, classroom: Classroom) -> Wanted:
    """What the field should hold now: students' active versions that passed, and the references."""
    field: Wanted = {}
    students = Member.objects.filter(role=Role.STUDENT, user__is_active=True, active__status=Status.PASSED)
    for member in students.select_related("active"):
        active = member.active
        if active is not None:
            field[member.slug] = (f"v{active.number} #{active.pk}", where.version(member.slug, active.number))
    for name in classroom.references:
        source = where.references / f"{name}.py"
        if source.is_file():
            field[f"{name}.py"] = ("reference", source)
    return field


def sync(folder: Path, field: Wanted) -> bool:
    """Make `folder` hold exactly `field`; whether anything changed."""
    folder.mkdir(parents=True, exist_ok=True)
    book = folder.with_suffix(".json")
    try:
        had: dict[str, str] = json.loads(book.read_text())
    except (OSError, ValueError):
        had = {}
    changed = False
    for entry in sorted(p.name for p in folder.iterdir()):
        if entry not in field or had.get(entry) != field[entry][0]:
            _remove(folder / entry)
            had.pop(entry, None)
            changed = True
    for name, (what, source) in field.items():
        if had.get(name) == what and (folder / name).exists():
            continue
        _copy(source, folder / name)
        had[name] = what
        changed = True
    book.write_text(json.dumps(had, indent=1, sort_keys=True))
    return changed


def versions(folder: Path) -> dict[str, str]:
    """Which version each entry of a synced folder is (as `sync` recorded it)."""
    try:
        data: dict[str, str] = json.loads(folder.with_suffix(".json").read_text())
        return data
    except (OSError, ValueError):
        return {}


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _copy(source: Path, dest: Path) -> None:
    """Copy a version in beside its place, then rename it there: a run never sees half of it."""
    part = dest.with_name(f".{dest.name}.part")
    _remove(part)
    if source.is_dir():
        shutil.copytree(source, part, symlinks=True)
    else:
        shutil.copy2(source, part)
    _remove(dest)
    part.rename(dest)
