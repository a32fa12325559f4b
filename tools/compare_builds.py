"""Compare the built pages of two book builds: the article body of every page (glued numbers,
tables, outputs), with the ids that change per run (widget models, plotly divs, hashes) normalised.

    python tools/compare_builds.py <before>/_build/html <after>/_build/html

Used to check that a refactoring changes nothing a reader sees: build the book before and after
(e.g. the old commit in a `git worktree`, with PYTHONPATH pointing at it) and compare."""
import re, sys, difflib
from pathlib import Path
a_root, b_root = Path(sys.argv[1]), Path(sys.argv[2])
NORM = [(re.compile(r"[0-9a-f]{32}"), "<id>"), (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
        (re.compile(r"[0-9a-f]{64}"), "<hash>")]
def body(p):
    s = p.read_text()
    m = re.search(r'<article class="bd-article">(.*?)</article>', s, re.S)
    s = m.group(1) if m else s
    for r, t in NORM: s = r.sub(t, s)
    return s
n = d = 0
for a in sorted(a_root.rglob("*.html")):
    if "_static" in a.parts or "_sources" in a.parts: continue
    b = b_root / a.relative_to(a_root)
    n += 1
    x, y = body(a), body(b)
    if x != y:
        d += 1
        diff = list(difflib.unified_diff(x.splitlines(), y.splitlines(), lineterm="", n=0))
        print(f"== {a.relative_to(a_root)}: {len(diff)} diff lines"); print("\n".join(l[:300] for l in diff[:10]))
print(f"{n} pages compared, {d} differ")
