"""The API page's docstrings as Sphinx reads them (book/_ext/api_docs.py's rst_safe, then
reStructuredText): every indented example or listing is a literal block (straight quotes, its
columns kept, a copy button), never a blockquote, which RST sets as prose with curly quotes that
a reader cannot copy; and nothing inside a block is escaped."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import api_docs  # noqa: E402


class CodeBlock(Directive):
    """Sphinx's code-block, as far as docutils needs it: its text one literal block."""
    has_content, optional_arguments = True, 1
    option_spec = {"force": directives.flag}

    def run(self):
        return [nodes.literal_block("\n".join(self.content), "\n".join(self.content))]


def docstrings() -> list[tuple[str, str]]:
    """(name, docstring) of every module of helpers and every class, function and method in it,
    read from the source (as inspect.getdoc cleans them) without importing anything."""
    out = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out.append((name, ast.get_docstring(tree) or ""))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append((f"{name}.{node.name}", ast.get_docstring(node) or ""))
    return [d for d in out if d[1]]


def parsed(doc: str):
    directives.register_directive("code-block", CodeBlock)
    text = "\n".join(api_docs.rst_safe(doc.splitlines()))
    return text, publish_doctree(text, settings_overrides={"report_level": 5, "halt_level": 5})


def test_every_indented_example_is_a_code_block_not_a_quote():
    found = docstrings()
    assert len(found) > 200
    quoted, literal, python = [], 0, 0
    for name, doc in found:
        text, tree = parsed(doc)
        quoted += [(name, q.astext()[:80]) for q in tree.findall(nodes.block_quote)]
        for block in tree.findall(nodes.literal_block):
            literal += 1
            # the block's text is the docstring's own: no escaped underscore, every line in the source
            assert "\\_" not in block.astext() or "\\_" in doc, (name, block.astext())
            assert all(line.strip() in doc for line in block.astext().splitlines()), name
        python += text.count(".. code-block:: python")
    assert not quoted, quoted[:5]
    # the examples a reader copies are highlighted as Python: the Session's front door among them
    assert literal >= 20 and python >= 12, (literal, python)
    text, _ = parsed(dict(found)["helpers.views.guess"])
    assert ".. code-block:: python" in text and 'guess.number("roof-pct"' in text


@pytest.mark.parametrize("doc, blocks", [
    ("Intro:\n\n    from x import y\n    y()\n\nAfter.", 1),
    ("Intro\n    a   b\n    c   d\nAfter.", 1),
    ("Layout::\n\n    a/  b\n\nAfter.", 1),
    ("- item\n  its continuation\n  - nested item\n\nAfter.", 0),
])
def test_blocks_and_lists(doc, blocks):
    _, tree = parsed(doc)
    assert len(list(tree.findall(nodes.literal_block))) == blocks
    assert not list(tree.findall(nodes.block_quote))
