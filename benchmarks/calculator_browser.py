"""The occupancy calculator page in headless Chromium: how fast it answers and how heavy it is.
Numbers to report, not a test.

    python benchmarks/calculator_browser.py --book _build/html [--before <another build>/_build/html]

1. latency: from an input change to the numbers, the table, the three impact curves and the SM
   drawing updated (the page updates synchronously in the input event, so this is the event's
   handling), and to the next frame painted after it; over a few hundred changes of every kind
   (typing into each field, the sliders, the GPU, the carveout, the limit, the presets), on this
   machine's CPU and again with Chromium's CPU throttled 4x (a phone, roughly);
2. weight: every byte the page loads, cold cache, by kind, and the page's own HTML; with
   ``--before``, the same for another build's calculator page (the book before this calculator).

Writes benchmarks/results/calculator_browser.json and prints a summary.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
PAGE = "notebooks/calculator.html"

# one change of each kind in turn; each returns [handled_ms, painted_ms]
CHANGES_JS = """async (rounds) => {
  const root = document.querySelector('[data-apo-calculator]');
  const q = (s) => root.querySelector(s);
  const field = (k) => q(`.apo-field[data-field="${k}"] input[type="text"]`);
  const slider = (k) => q(`.apo-field[data-field="${k}"] input[type="range"]`);
  const gpu = q('.apo-field-gpu select');
  const carveout = q('select[id$="-carveout"]');
  const radios = [...root.querySelectorAll('input[type="radio"]')];
  const presets = [...root.querySelectorAll('.apo-preset')];
  const gpus = [...gpu.options].map(o => o.value);
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const out = {};
  const kinds = {
    threads: (i) => { field('threads').value = String(32 + (i * 37) % 992); field('threads').dispatchEvent(new Event('input', {bubbles: true})); },
    registers: (i) => { field('registers').value = String((i * 53) % 256); field('registers').dispatchEvent(new Event('input', {bubbles: true})); },
    smem: (i) => { field('shared_memory').value = String((i * 7919) % 60000); field('shared_memory').dispatchEvent(new Event('input', {bubbles: true})); },
    slider: (i) => { slider('registers').value = String((i * 31) % 256); slider('registers').dispatchEvent(new Event('input', {bubbles: true})); },
    gpu: (i) => { gpu.value = gpus[i % gpus.length]; gpu.dispatchEvent(new Event('change', {bubbles: true})); },
    carveout: (i) => { carveout.selectedIndex = i % carveout.options.length; carveout.dispatchEvent(new Event('change', {bubbles: true})); },
    limit: (i) => { const r = radios[i % 2]; r.checked = true; r.dispatchEvent(new Event('change', {bubbles: true})); },
    preset: (i) => presets[i % presets.length].click(),
  };
  for (const [kind, change] of Object.entries(kinds)) {
    out[kind] = [];
    for (let i = 0; i < rounds; i++) {
      await frame();
      const t0 = performance.now();
      change(i);
      const t1 = performance.now();
      await frame();
      out[kind].push([t1 - t0, performance.now() - t0]);
    }
  }
  return out;
}"""


def serve(directory: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(directory)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return proc, f"http://127.0.0.1:{port}"


def summary(values: list[float]) -> dict:
    values = sorted(values)
    return {"median_ms": round(statistics.median(values), 2),
            "p95_ms": round(values[int(0.95 * (len(values) - 1))], 2),
            "max_ms": round(values[-1], 2), "n": len(values)}


def latency(browser, base: str, rounds: int, throttle: float) -> dict:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/{PAGE}", wait_until="load")
    page.wait_for_function("() => (window.attentionProfiled?.calculators || []).length > 0")
    cdp = context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
    raw = page.evaluate(CHANGES_JS, rounds)
    context.close()
    handled = [h for kind in raw.values() for h, _ in kind]
    painted = [p for kind in raw.values() for _, p in kind]
    return {"cpu_throttling": throttle, "changes": len(handled),
            "handled": summary(handled), "to_next_paint": summary(painted),
            "by_kind_median_handled_ms": {k: round(statistics.median(h for h, _ in v), 2)
                                          for k, v in raw.items()}}


def weight(browser, base: str) -> dict:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    sizes: dict[str, int] = {}
    files: list[tuple[str, int]] = []

    def on_response(response):
        try:
            body = response.body()
        except Exception:  # noqa: BLE001 - a redirect has no body
            return
        kind = response.request.resource_type
        sizes[kind] = sizes.get(kind, 0) + len(body)
        files.append((response.url.replace(base, ""), len(body)))

    page.on("response", on_response)
    page.goto(f"{base}/{PAGE}", wait_until="load")
    page.wait_for_load_state("networkidle")
    context.close()
    files.sort(key=lambda f: -f[1])
    return {"total_bytes": sum(sizes.values()), "by_kind_bytes": sizes,
            "html_bytes": next(n for u, n in files if u.split("?")[0].endswith(PAGE)),
            "requests": len(files), "largest": files[:6]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--book", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--before", type=Path, help="another build's _build/html, to compare the weight")
    parser.add_argument("--rounds", type=int, default=40, help="changes of each kind")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "calculator_browser.json")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    result = {"when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": platform.python_version()}}
    procs = []
    try:
        proc, base = serve(args.book)
        procs.append(proc)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            result["machine"]["chromium"] = browser.version
            result["latency"] = [latency(browser, base, args.rounds, 1),
                                 latency(browser, base, args.rounds, 4)]
            result["weight"] = weight(browser, base)
            if args.before:
                proc, before = serve(args.before)
                procs.append(proc)
                result["weight_before"] = weight(browser, before)
            browser.close()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for run in result["latency"]:
        print(f"CPU x{run['cpu_throttling']:g}: {run['changes']} changes, handled in "
              f"{run['handled']['median_ms']} ms median / {run['handled']['p95_ms']} ms p95 / "
              f"{run['handled']['max_ms']} ms max; next paint {run['to_next_paint']['median_ms']} ms "
              f"median / {run['to_next_paint']['p95_ms']} ms p95")
    w = result["weight"]
    print(f"weight: {w['total_bytes'] / 1024:.0f} KiB in {w['requests']} requests "
          f"(HTML {w['html_bytes'] / 1024:.0f} KiB)")
    if "weight_before" in result:
        b = result["weight_before"]
        print(f"before: {b['total_bytes'] / 1024:.0f} KiB in {b['requests']} requests "
              f"(HTML {b['html_bytes'] / 1024:.0f} KiB)")
    print(f"written to {args.out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
