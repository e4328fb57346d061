"""The documentation (docs/, ``make docs``): built offline with warnings as errors, its
generated pages (CLI reference, data schema, validation tables) complete."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))
import gen  # noqa: E402  (docs/gen.py)


def test_conf_reaches_no_network():
    # CI builds on a clean clone with only the package registries reachable
    tree = ast.parse((DOCS / "conf.py").read_text())
    assigned = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    extensions = ast.literal_eval(assigned["extensions"])
    assert not [e for e in extensions if "intersphinx" in e or "linkcheck" in e]
    assert "numpydoc" in extensions and "sphinx.ext.autosummary" in extensions
    assert "intersphinx_mapping" not in assigned


def test_make_docs_treats_warnings_as_errors_and_ci_runs_it_after_lint():
    make = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^docs:.*\n\t(.*\\\n\t.*)$", make, re.M).group(1)
    assert "sphinx-build" in recipe and "-W" in recipe.split() and "--keep-going" in recipe
    assert "docs/_build" in recipe
    # a build marked clean only when sphinx exits 0 (the docs test reads that build)
    assert recipe.startswith("rm -f docs/_build/.built-clean;")
    assert recipe.rstrip().endswith("&& touch docs/_build/.built-clean")
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci.index("make docs") == ci.index("make lint") + 1


@pytest.mark.parametrize("column,unit", [
    ("hbm_bandwidth_tb_per_s", "TB/s"),            # gpus.csv: H100 SXM 3.35 TB/s of HBM3
    ("bandwidth_gb_per_s_per_gpu", "GB/s per GPU"),
    ("memory_gib", "GiB (2**30 bytes)"),
    ("on_demand_usd_per_hour", "USD per hour"),
    ("latency_us", "microseconds"),
    ("bf16_dense_tflops", "TFLOP/s, dense"),
    ("read_gb_per_s", "GB/s (1e9 bytes)"),
    ("link_gbit_per_s", "Gbit/s"),
    ("usd_per_gb_month", "USD per GB-month"),
    ("seq_len", "tokens"),
    ("global_batch", "sequences"),              # Megatron's global batch is in sequences
    ("notes", ""),                              # text has no unit
])
def test_units_follow_the_column_names(column, unit):
    got = gen.unit_of(column)
    assert got.startswith(unit) if unit else got == ""


def test_data_page_lists_every_csv_and_every_column():
    page = gen.data_schema()
    for path in sorted((ROOT / "data").glob("*.csv")):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        head = f"``data/{path.name}``"
        assert head in page
        section = page.split(head, 1)[1].split("\n``data/", 1)[0]
        assert f"{len(df)} rows," in section
        for col in df.columns:
            assert f"``{col}``" in section, (path.name, col)


@pytest.mark.slow   # runs each subcommand's example of the guide
def test_cli_page_shows_every_subcommands_help():
    from llmcost.cli import build_parser
    sub = build_parser()._subparsers._group_actions[0].choices
    page = gen.cli_reference()
    for name, parser in sub.items():
        assert f"``llmcost {name}``" in page
        # every option of the subcommand is documented, --json included
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in page, (name, flag)
    # the JSON keys the command line contract promises (DESIGN's table), read from real runs
    for name, key in (("mfu", "effective_utilization"), ("breakeven", "breakeven_months"),
                      ("spot", "net_savings"), ("checkpoint", "daly_interval_s"),
                      ("serve", "usd_per_million_output_tokens"), ("review", "napkin_gpu_hours")):
        section = page.split(f"``llmcost {name}``\n", 1)[1].split("\n``llmcost ", 1)[0]
        assert f"``{key}``" in section, (name, key)


@pytest.mark.slow
def test_validation_page_carries_every_calibration_row():
    # the page a clean, fresh `make docs` generated (CI builds them just before), else anew
    built = DOCS / "generated" / "validation.rst"
    page = built.read_text() if _clean_build_is_fresh() and built.exists() \
        else gen.validation_tables()
    n_rows = len(pd.read_csv(ROOT / "data" / "calibration_runs.csv"))
    # the table's "rows predicted / listed" column: its listed counts add up to the CSV
    listed = [int(m) for m in re.findall(r"^     - \d+ / (\d+)$", page, re.M)]
    assert sum(listed) == n_rows
    # and the full output of make validate follows, one line per calibration row
    ids = pd.read_csv(ROOT / "data" / "calibration_runs.csv")["id"]
    assert all(f"   {i} " in page for i in ids)


def _clean_build_is_fresh() -> bool:
    """``make docs`` marks a build that ended without a warning (docs/_build/.built-clean);
    it is this tree's when no source the docs read is newer (CI runs ``make docs`` just
    before ``make test``)."""
    mark = DOCS / "_build" / ".built-clean"
    if not mark.exists():
        return False
    sources = [*DOCS.glob("*.*"), *(ROOT / "llmcost").rglob("*.py"), *(ROOT / "data").glob("*.csv"),
               ROOT / "README.md", ROOT / "pyproject.toml"]
    return all(p.stat().st_mtime <= mark.stat().st_mtime for p in sources)


@pytest.mark.slow
def test_docs_build_without_a_warning(tmp_path):
    if _clean_build_is_fresh():
        out = DOCS / "_build" / "html"
    else:
        out = tmp_path / "html"
        run = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going",
                              "-q", str(DOCS), str(out), "-d", str(tmp_path / "doctrees")],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "WARNING" not in run.stderr
    for page in ("index", "architecture", "model", "data", "cli", "serving", "api",
                 "api/llmcost.training.flops"):
        assert (out / f"{page}.html").exists(), page
    # the API reference carries a formula's docstring: its equation and its reference
    flops = (out / "api" / "llmcost.training.flops.html").read_text()
    assert "flops_per_token" in flops and "Korthikanti" in flops


README = ROOT / "README.md"


def test_readme_is_a_users_page():
    # about 100 lines, the long sections live in docs/
    assert len(README.read_text().splitlines()) < 120


def test_readme_links_into_docs_resolve():
    text = README.read_text()
    links = re.findall(r"\]\((docs/[^)#]+)\)", text)
    assert len(links) >= 5
    for link in links:
        assert (ROOT / link).is_file(), link


def test_readme_shows_one_example_link_per_app_and_each_loads_cleanly():
    from llmcost.scenario import Scenario
    text = README.read_text()
    apps = {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")} - {"index"}
    examples = dict(re.findall(r"`(\w+)\.ipynb\?([^`]+)`", text))
    assert set(examples) == apps
    for app, query in examples.items():
        # strict: an unknown key or a bad value would raise instead of warning
        _, warnings = Scenario.from_query(query, strict=True)
        assert warnings == [], (app, warnings)


def test_the_license_changelog_and_contributing_guide_are_there_and_the_version_is_one():
    import tomllib
    from importlib.metadata import version

    import llmcost
    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "MIT"}
    assert (root / "LICENSE").read_text().startswith("MIT License")
    assert (root / "CHANGELOG.md").read_text().startswith("# Changelog")
    assert "make test-fast" in (root / "CONTRIBUTING.md").read_text()
    # one place: pyproject reads it from the package (hatch), the install reports the same
    assert "version" not in project and project["dynamic"] == ["version"]
    assert version("llmcost") == llmcost.__version__


def test_code_and_tests_say_why_not_which_issue_asked():
    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(r"issue [0-9]+", re.IGNORECASE)
    found = [f"{p.relative_to(root)}:{i}" for folder in ("llmcost", "tests")
             for p in sorted((root / folder).rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
