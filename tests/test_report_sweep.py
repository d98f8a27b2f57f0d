"""The static report's every page read as a person reads it (tests/pagetext.py: no Python repr, None,
nan, template name or raw time; a title that is text). The field exercises each of its sections: a bot that
speaks on stderr, one that crashes, one that times out, a steady one, and a bot whose source changed between
two runs (its old version retired), played by `arena run` as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.pagetext import findings
from tests.test_server_sweep import CRASHES, SPEAKS, STALLS

ROOT = Path(__file__).resolve().parent.parent
BOTS = {"speaks": SPEAKS, "crashes": CRASHES, "stalls": STALLS}


def _run(base: Path) -> None:
    args = ["run", "--rounds", "1", "--move-time", "150", "--out", str(base / "reports"), "--quiet"]
    done = subprocess.run(
        [sys.executable, "-m", "arena", *args, "--no-sandbox"],
        cwd=base,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def test_every_page_of_the_report_reads_as_text(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    bots.mkdir()
    (bots / "greedy.py").write_bytes((ROOT / "bots" / "greedy.py").read_bytes())
    for name, source in BOTS.items():
        (bots / f"{name}.py").write_text(source)
    _run(tmp_path)
    (bots / "speaks.py").write_text(SPEAKS.replace("thinking about", "now thinking about"))
    _run(tmp_path)
    pages = sorted((tmp_path / "reports").rglob("*.html"))  # its pages: sections of one file, a bot's each
    sections = (tmp_path / "reports" / "default" / "index.html").read_text()
    for shown in ('id="retired"', "crashes", "timeout", *(f'id="bot-{b}"' for b in BOTS)):
        assert shown in sections, f"the field does not reach the report's {shown!r}"
    found = [
        f"{page.relative_to(tmp_path)}: {said}"
        for page in pages
        for said in findings(page.read_text(), zoned=True)
    ]
    assert found == [], "\n".join(found)
