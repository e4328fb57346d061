"""Every `llmcost` command the README and the docs' guides show runs, as written and with --json;
the README's review app link and its `llmcost review` example are one run, and its picture
shows that run's figures as the code gives them today."""

import json
import re
import sys
from pathlib import Path

import pytest
from bench_support import benchmark_module

from llmcost.cli import main
from llmcost.review import evaluate
from llmcost.review.format import headline_items
from llmcost.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# the pages of docs/ that show commands (the long examples moved there from the README)
DOC_PAGES = [ROOT / "docs" / "cli_guide.md", ROOT / "docs" / "model.md"]
# the commands of a page are read as the docs build reads the guide's examples (docs/gen.py)
sys.path.insert(0, str(ROOT / "docs"))
import gen  # noqa: E402

COMMANDS = gen.page_commands(README)
DOC_COMMANDS = [c for page in DOC_PAGES for c in gen.page_commands(page)]


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


def _readme_review_cli_query() -> str:
    """The query of the README's ``llmcost review --query "..."`` example."""
    argv = [c for c in COMMANDS if c[0] == "review"]
    assert len(argv) == 1, "the README shows one llmcost review example"
    return argv[0][argv[0].index("--query") + 1]


def test_readme_app_link_and_cli_example_give_the_same_run(capsys):
    # the README's link and CLI example for "the same" 405B run gave 71.2 and 68.4
    # days (different fabrics). The link as the review app reads it (Scenario.from_query,
    # then evaluate), the example as the CLI runs it: one scenario, the same days and costs.
    link = benchmark_module("screenshot").readme_query()
    s, warnings = Scenario.from_query(link)
    assert warnings == []
    app = evaluate(s).to_json()
    assert main(["review", "--query", _readme_review_cli_query(), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert app["days"] is not None and cli["days"] == app["days"]
    assert app["costs_usd"] and cli["costs_usd"] == app["costs_usd"]
    assert cli["scenario"] == app["scenario"]


def test_readme_picture_shows_todays_figures_for_its_link():
    # the picture notes the link and headline it was taken with (benchmarks/screenshot.py):
    # a change of the link or of the review's figures leaves it stale until `make screenshot`
    shot = benchmark_module("screenshot")
    image = re.search(r"!\[[^]]*\]\(([^)]+\.png)\)", README.read_text(encoding="utf-8")).group(1)
    assert ROOT / image == shot.OUT
    note = shot.read_note(shot.OUT)
    assert note is not None, f"{image} was not made by `make screenshot`"
    assert shot.png_size(shot.OUT) == (shot.WIDTH, shot.HEIGHT)
    assert note["query"] == shot.readme_query(), "the README's link changed: make screenshot"
    s, _ = Scenario.from_query(note["query"])
    want = {k: text for k, (_, text, *_) in headline_items(evaluate(s), shot.HEADLINE_KEYS).items()}
    got = {k: " ".join(text.split()) for k, text in note["headline"].items()}
    assert got == want, "the review's figures changed: make screenshot"
