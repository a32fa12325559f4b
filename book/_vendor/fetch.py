"""Re-vendor the browser libraries the static book loads, from the npm registry.

    python book/_vendor/fetch.py          # writes book/_vendor/files/ and manifest.json

The book must not ask any CDN for anything (the reader may be offline; the build machine may
be), so two libraries are kept in the repository (the ipywidgets embed manager and RequireJS
were here too, 3.6 MB a page, until the guesses became their own outputs' JavaScript):

* ``mathjax`` 3 ``tex-chtml.js`` and its woff-v2 fonts: Sphinx's math renderer;
* ``plotly.js-cartesian-dist-min``: plotly.js's partial bundle of the cartesian trace types (the
  book draws bar, scatter and heatmap traces; tests/test_browser.py checks that it holds every
  type the built pages draw), at the plotly.js version the pinned plotly.py writes figures for
  (book/_ext/plotly_js.py checks that): 1.5 MB where the full plotly.min.js is 4.8 MB.

They are the files of the published npm tarballs, byte for byte. JavaScript is stored
xz-compressed; book/_ext/static_book.py
decompresses every file into ``_static/vendor/`` at build time and checks each one against the
sha256 in manifest.json, so what a reader's browser runs is what npm published.

Needs ``npm`` (only to run this script; the book build needs neither npm nor the network).
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import lzma
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"

# package, version, [(path inside the tarball, path under _static/vendor)]
PACKAGES = [
    ("mathjax", "3.2.2", [
        ("package/es5/tex-chtml.js", "mathjax/tex-chtml.js"),
        ("package/LICENSE", "mathjax/LICENSE"),
        ("package/es5/output/chtml/fonts/woff-v2/", "mathjax/output/chtml/fonts/woff-v2/"),
    ]),
    ("plotly.js-cartesian-dist-min", "4.1.1", [
        ("package/plotly-cartesian.min.js", "plotly/plotly-cartesian.min.js"),
        ("package/LICENSE", "plotly/LICENSE"),
    ]),
]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    if FILES.exists():
        shutil.rmtree(FILES)
    manifest = {"packages": [], "files": []}
    with tempfile.TemporaryDirectory() as tmp:
        for name, version, wanted in PACKAGES:
            out = subprocess.run(["npm", "pack", "--json", f"{name}@{version}"], cwd=tmp,
                                 check=True, capture_output=True, text=True).stdout
            info = json.loads(out)[0]
            manifest["packages"].append({"name": name, "version": version,
                                         "tarball": info["filename"], "integrity": info["integrity"]})
            with tarfile.open(Path(tmp) / info["filename"]) as tar:
                members = {m.name: m for m in tar.getmembers() if m.isfile()}
                for src, dest in wanted:
                    if "*" in src:
                        picked = [(n, dest + n.rsplit("/", 1)[-1]) for n in sorted(members)
                                  if fnmatch.fnmatch(n, src)]
                    elif src.endswith("/"):
                        picked = [(n, dest + n[len(src):]) for n in sorted(members) if n.startswith(src)]
                    else:
                        picked = [(src, dest)]
                    if not picked:
                        raise SystemExit(f"{name}@{version} has no {src}")
                    for member, target in picked:
                        data = tar.extractfile(members[member]).read()
                        stored = target + ".xz" if target.endswith(".js") else target
                        path = FILES / stored
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)
                                         if stored.endswith(".xz") else data)
                        manifest["files"].append({"path": target, "stored": stored, "package": name,
                                                  "version": version, "bytes": len(data),
                                                  "sha256": sha256(data)})
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(f.stat().st_size for f in FILES.rglob("*") if f.is_file())
    print(f"{len(manifest['files'])} files, {total / 1024:.0f} KiB stored")


if __name__ == "__main__":
    main()
