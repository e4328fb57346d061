"""Every `llmcost` command the README and the docs' guides show runs, as written and with --json."""

import json
import shlex
from pathlib import Path

import pytest

from llmcost.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# the pages of docs/ that show commands (the long examples moved there from the README)
DOC_PAGES = [ROOT / "docs" / "cli_guide.md", ROOT / "docs" / "model.md"]


def readme_commands(path: Path = README) -> list[list[str]]:
    """The `llmcost ...` lines of a page's bash blocks, continuation lines joined."""
    cmds, in_bash, buf = [], False, ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_bash = line.strip() == "```bash"
            continue
        if not in_bash:
            continue
        buf += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if line.endswith("\\"):
            continue
        if buf.strip().startswith("llmcost "):
            cmds.append(shlex.split(buf.split("#")[0])[1:])
        buf = ""
    return cmds


COMMANDS = readme_commands()
DOC_COMMANDS = [c for page in DOC_PAGES for c in readme_commands(page)]


def test_the_readme_shows_every_subcommand():
    shown = {c[0] for c in COMMANDS}
    # every subcommand of the parser is shown (list aside)
    from llmcost.cli import build_parser
    sub = build_parser()._subparsers._group_actions[0].choices
    assert set(sub) - {"list"} <= shown
    assert len(COMMANDS) >= 12


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:3]) for c in COMMANDS])
@pytest.mark.slow
def test_readme_command_runs(argv, capsys):
    _runs(argv, capsys)


def test_the_docs_show_every_subcommand():
    from llmcost.cli import build_parser
    sub = build_parser()._subparsers._group_actions[0].choices
    assert set(sub) - {"list"} <= {c[0] for c in DOC_COMMANDS}


@pytest.mark.slow
@pytest.mark.parametrize("argv", DOC_COMMANDS, ids=[" ".join(c[:3]) for c in DOC_COMMANDS])
def test_docs_command_runs(argv, capsys):
    _runs(argv, capsys)


def _runs(argv, capsys):
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.strip() and "Traceback" not in out + err
    assert main(argv + ["--json"]) == 0
    out, err = capsys.readouterr()
    assert out.count("\n") == 1
    json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON output"))
