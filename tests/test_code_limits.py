"""The sizes the package keeps, so that inputs stay grouped and modules stay by topic: no public
function takes more than 8 parameters (self and cls aside), no function is over 150 lines and
no module over 800."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "llmcost"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_PARAMETERS, MAX_FUNCTION_LINES, MAX_MODULE_LINES = 8, 150, 800


def functions(tree: ast.AST, public: bool = True):
    """(function node, whether it is public) for every function of ``tree``, nested included:
    public when its name and its class's have no leading underscore and it is not nested in a
    function."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, public and (not node.name.startswith("_") or node.name == "__init__")
            yield from functions(node, public=False)
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, public and not node.name.startswith("_"))


def parameters(node: ast.FunctionDef) -> list[str]:
    a = node.args
    named = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
    return named + [f"*{x.arg}" for x in (a.vararg, a.kwarg) if x is not None]


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"


def test_the_counter_counts_what_a_reader_counts():
    tree = ast.parse("class A:\n def f(self, a, /, b, *c, d=1, **e):\n  def _g(x): pass\n"
                     "def _h(a):\n pass\n")
    found = [(n.name, pub, parameters(n)) for n, pub in functions(tree)]
    assert found == [("f", True, ["a", "b", "d", "*c", "*e"]), ("_g", False, ["x"]),
                     ("_h", False, ["a"])]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_sizes(path):
    text = path.read_text()
    assert text.count("\n") <= MAX_MODULE_LINES, f"{path.name}: {text.count(chr(10))} lines"
    tree = ast.parse(text)
    wide = [f"{where(path, n)}: {len(parameters(n))}" for n, public in functions(tree)
            if public and len(parameters(n)) > MAX_PARAMETERS]
    long_ = [f"{where(path, n)}: {n.end_lineno - n.lineno + 1} lines" for n, _ in functions(tree)
             if n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not wide and not long_, wide + long_
