"""`arena new`: a student's first bot, copied from a starter that already plays (greedy, clock-aware).

The starters live beside this module as package data, one folder per language (starters/<lang>/), so a
student gets the same files from a checkout and from an installed arena. Each is a bot folder with a
bot.toml, commented for reading; `{{NAME}}` in them becomes the bot's name.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from arena.match.bots import BotError, check_name

LANGUAGES = ("python", "c", "cpp", "java", "js")  # the folders under starters/, in the order shown
PROTOCOLS = {"v1": LANGUAGES, "kgp": ("python",)}  # a KGP agent's starter is starters/<lang>-kgp/
PLACEHOLDER = "{{NAME}}"


def _starter(lang: str, protocol: str = "v1") -> Traversable:
    if protocol not in PROTOCOLS:
        raise BotError(f"no starter for protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    if lang not in PROTOCOLS[protocol]:
        known = ", ".join(PROTOCOLS[protocol])
        raise BotError(f"no {protocol} starter for language {lang!r}; known: {known}")
    return (
        resources.files("arena.student") / "starters" / (lang if protocol == "v1" else f"{lang}-{protocol}")
    )


def new_bot(name: str, lang: str, folder: Path, protocol: str = "v1") -> Path:
    """Copy the `lang` starter of `protocol` into `folder/name` with its name filled in; BotError (one line)
    for a name a bot may not have, an unknown language, or a target that exists. A missing bots folder is
    made."""
    folder = Path(folder)
    target = folder / name
    check_name(name, target)
    if name.endswith(".py"):
        raise BotError(f"{target}: the starters are bot folders: name it without .py, e.g. {name[:-3]}")
    starter = _starter(lang, protocol)
    if folder.exists() and not folder.is_dir():
        raise BotError(f"{folder}: not a folder, so it cannot hold bots")
    for taken in (target, folder / f"{name}.py"):  # a NAME.py would be a second bot of that name
        if taken.exists() or taken.is_symlink():
            raise BotError(f"{taken} already exists: choose another name, or remove it first")
    folder.mkdir(parents=True, exist_ok=True)
    target.mkdir()
    target.chmod(0o755)  # a confined bot runs as a user of its own: its files must be readable by all
    for source in sorted(starter.iterdir(), key=lambda f: f.name):
        if not source.is_file():
            continue
        text = source.read_text(encoding="utf-8").replace(PLACEHOLDER, name)
        (target / source.name).write_text(text, encoding="utf-8")
        (target / source.name).chmod(0o644)
    return target
