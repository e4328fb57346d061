"""Every notebook runs headless (nbclient) without errors or warnings, and a link's query
string (QUERY_STRING in the kernel's environment, as Voila sets it) preloads the Scenario."""

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def run(path: Path, query: str = ""):
    """The executed notebook (an nbformat NotebookNode)."""
    # imported here: nbformat's schema validator takes ~3 s to import, at every collection
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    old = os.environ.get("QUERY_STRING")
    os.environ["QUERY_STRING"] = query
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        if old is None:
            os.environ.pop("QUERY_STRING", None)
        else:
            os.environ["QUERY_STRING"] = old
    return nb


def outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def test_one_thin_notebook_per_registered_app_and_the_landing_page():
    import nbformat

    from llmcost.apps.registry import apps
    assert {p.stem for p in NOTEBOOKS} == {c.name for c in apps()} | {"index"}
    assert [c.name for c in apps()][0] == "review"
    for p in NOTEBOOKS:
        nb = nbformat.read(p, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "llmcost.apps" in code[0].source
        assert not any(c.get("outputs") for c in code), f"{p.name} is committed with outputs"
        if p.stem != "index":
            # the notebook shows the app registered under its own name, then one commented
            # cell to tinker with, which prints only outside Voila
            assert f'show("{p.stem}")' in code[0].source
            assert len(code) == 2 and code[1].source.startswith("#")
            assert "if not in_voila()" in code[1].source and "app.compute(" in code[1].source
        else:
            assert len(code) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_cleanly(path):
    nb = run(path)
    outs = outputs(nb)
    assert not [o for o in outs if o.output_type == "error"]
    assert not [o for o in outs if o.output_type == "stream" and o.name == "stderr"], \
        "warnings printed"
    views = [o for o in outs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, "no app widget displayed"


def run_with_cell(name: str, code: str, query: str = "", folder: Path | None = None):
    """Run notebook ``name`` with one more cell (``code``) after it; return the notebook and
    the text that cell printed. The copy lives beside the notebooks (or in ``folder``)."""
    import nbformat
    nb = nbformat.read(NOTEBOOKS[0].parent / f"{name}.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(code))
    path = (folder or NOTEBOOKS[0].parent) / f"_probe_{name}.ipynb"
    try:
        nbformat.write(nb, path)
        done = run(path, query)
    finally:
        path.unlink(missing_ok=True)
    return done, "".join(o.get("text", "") for o in outputs(done) if o.output_type == "stream")


def test_query_string_reaches_the_kernel():
    _, text = run_with_cell("review", "print(app.scenario.model, app.scenario.gpus)",
                            "model=llama3-8b&gpus=64&theme=dark")
    assert "llama3-8b 64" in text


def test_app_figures_follow_the_cell_and_compare_link_pins_scenarios():
    """The page is sent before the first results (a progress line); they arrive once the
    cell has finished, on the kernel's loop. A b. link pins A and shows B."""
    _, text = run_with_cell("review", "print(app.results is not None, len(app.pins), app.label, "
                            "app.scenario.gpu, 'llmc-compare-table' in app.compare_box.value)",
                            "model=llama3-8b&gpus=64&b.gpu=b200")
    assert "True 1 B b200 True" in text


@pytest.mark.parametrize("name", ["index", "review"])
def test_a_corrupt_catalog_is_named_on_the_page_not_a_traceback(name, tmp_path, monkeypatch):
    # file, row and column on the page instead of Voila's "error executing cell"
    import shutil
    data = tmp_path / "data"
    shutil.copytree(Path(__file__).resolve().parents[2] / "data", data)
    gpus = (data / "gpus.csv").read_text().splitlines()
    head = gpus[0].split(",")
    row = gpus[1].split(",")
    row[head.index("gpus_per_node")] = "8.5"
    (data / "gpus.csv").write_text("\n".join([gpus[0], ",".join(row), *gpus[2:]]) + "\n")
    monkeypatch.setenv("LLMCOST_DATA", str(data))
    # the extra cell runs after the figures computed once the first cell finished
    nb, text = run_with_cell(name, "print(page.cards['review'].value if 'page' in dir() else '')",
                             folder=tmp_path)
    outs = outputs(nb)
    assert not [o for o in outs if o.output_type == "error"]
    # the message widget's full text is in the notebook's widget state
    shown = json.dumps(nb.metadata.get("widgets", {})) + text
    # the review says so at once; the landing page's cards each say why they have no figure
    assert "The catalog cannot be read" in shown if name == "review" else "Not computed" in shown
    assert "gpus.csv" in shown and "gpus_per_node" in shown and "row 1" in shown, shown[:500]


def tinker_cell_lines(path: Path) -> list[str]:
    """The lines a notebook's tinker cell (its second) prints when a person runs it, after
    checking that it prints nothing in a Voila page (VOILA_KERNEL_ID set in its kernel)."""
    nb = run(path)
    printed = "".join(o.get("text", "") for o in nb.cells[1].get("outputs", ())
                      if o.output_type == "stream")
    os.environ["VOILA_KERNEL_ID"] = "probe"
    try:
        quiet = run(path)
    finally:
        os.environ.pop("VOILA_KERNEL_ID")
    assert not quiet.cells[1].get("outputs")
    return printed.splitlines()


@pytest.mark.parametrize("name", ["review", "spot"])
def test_the_tinker_cell_prints_the_headline_of_its_scenario_and_nothing_in_voila(name, tmp_path):
    # a reviewer who opens the notebook has a cell to tinker with; a Voila page
    # (VOILA_KERNEL_ID set in its kernel) shows only the app
    printed = tinker_cell_lines(NOTEBOOKS[0].parent / f"{name}.ipynb")
    from dataclasses import replace

    from llmcost.apps.registry import app
    panel = app(name)(query="")
    field = {"review": "gpus", "spot": "preemptions_per_day"}[name]
    other = panel.compute(replace(panel.scenario, **{field: 2 * getattr(panel.scenario, field)}))
    expected = [f"{label}: {text}" for label, text, *_ in panel.headline(other).values()]
    assert expected and printed == expected
