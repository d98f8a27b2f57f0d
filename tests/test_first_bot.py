"""The README's "Your first bot" block, run as written: what a student does with only the README, from
`arena new` to a tournament whose bots folder also holds their notes and sources."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARENA = str(Path(sys.executable).parent / "arena")
# A person who types the pits in turn: a wrong entry (an empty pit) is asked again, so every game ends.
HUMAN_KEYS = "1\n2\n3\n4\n5\n6\n" * 100


def readme_steps() -> list[list[str]]:
    """The commands of the first sh block under '## Your first bot', comments dropped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Your first bot", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README's 'Your first bot' section has no sh block"
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.slow
def test_the_readmes_first_bot_steps_run_as_written(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    bots.mkdir()
    for name in ("greedy.py", "random.py"):  # the bundled bots a student's field starts with (quick ones)
        shutil.copy(ROOT / "bots" / name, bots / name)
    (bots / "notes.md").write_text("my ideas: look two moves ahead\n")
    (bots / "scratch.c").write_text("int main(void) { return 0; }\n")  # a source lying about
    steps = readme_steps()
    assert [step[:2] for step in steps] == [
        ["arena", "new"],
        ["arena", "check"],
        ["arena", "play"],
        ["arena", "run"],
    ], steps
    env = {**os.environ, "PATH": f"{Path(ARENA).parent}:{os.environ['PATH']}"}
    outputs = []
    for step in steps:
        human = "human" in step
        done = subprocess.run(
            [ARENA, *step[1:]],
            cwd=tmp_path,
            env=env,
            input=HUMAN_KEYS if human else "",
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{shlex.join(step)}:\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        outputs.append(done.stdout + done.stderr)
    made, checked, played, ran = outputs
    assert (bots / "mybot" / "bot.toml").is_file() and "arena check mybot" in made
    assert "ready to play" in checked and "FAIL" not in checked
    assert re.search(r"(you|mybot) (wins|win) \d+-\d+|draw", played), played
    assert "not entered" not in ran, ran  # the notes and the stray source are passed over, not bots
    assert re.search(r"\bmybot\b.*%", ran), ran  # the student's bot is on the leaderboard
    assert (tmp_path / "reports" / "default" / "index.html").is_file()
