import gzip
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
TRACES = sorted((ROOT / "notebooks" / "traces").glob("*/*__*.json.gz"))


def cuda_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def load_static_book():
    """book/_ext/static_book.py, the book's Sphinx extension (Sphinx finds it by path, not as a package)."""
    spec = importlib.util.spec_from_file_location("static_book", ROOT / "book" / "_ext" / "static_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def raw_document(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def _events(source: Path | list[dict]) -> list[dict]:
    return source if isinstance(source, list) else raw_document(source)["traceEvents"]


def raw_last_step(source: Path | list[dict]) -> tuple[list[tuple[dict, set[str]]], tuple[float, float], list[dict]]:
    """The last profiler step's GPU events, read from the raw JSON (a file, or its event list) with
    plain loops: each event (with `launched_by`, the runtime or driver call of the same correlation
    id) and the names of the host ops that hold that call; the step's (start, end); and all events."""
    events = _events(source)
    steps = [e for e in events if re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")) and e["ph"] == "X"]
    last = max(steps, key=lambda e: int(e["name"].split("#")[1]))
    lo, hi = last["ts"], last["ts"] + last["dur"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and e.get("ph") == "X" and lo <= e["ts"] <= hi}
    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    out = []
    for e in sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                     and e["args"].get("correlation") in calls), key=lambda e: e["ts"]):
        call = calls[e["args"]["correlation"]]
        holders = {o["name"] for o in ops if o["ts"] <= call["ts"] and o["ts"] + o["dur"] >= call["ts"] + call["dur"]}
        out.append((e | {"launched_by": call["name"]}, holders))
    return out, (lo, hi), events


def raw_forward_ops(source: Path | list[dict]) -> list[str]:
    """The names of the host ops (cpu_op and user_annotation events) under the last profiler step's
    attn_fwd annotation (itself excluded), read from the raw JSON (a file, or its event list)."""
    events = _events(source)
    _, (lo, hi), _ = raw_last_step(events)
    root = next(e for e in events if e.get("cat") == "user_annotation" and e.get("name") == "attn_fwd"
                and e.get("ph") == "X" and lo <= e["ts"] <= hi)
    return [e["name"] for e in events if e.get("cat") in ("cpu_op", "user_annotation") and e.get("ph") == "X"
            and e is not root and root["ts"] <= e["ts"] and e["ts"] + e["dur"] <= root["ts"] + root["dur"]]


def raw_per_step(events: list[dict]) -> list[tuple[float, float]]:
    """Per profiler step, from the raw events: GPU time (the summed durations of the GPU events
    whose launch, tied by correlation id, lies in the step) and CPU time (the step's attn_fwd
    annotation), in µs."""
    complete = [e for e in events if e.get("ph") == "X"]
    steps = [e for e in complete if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    rows = []
    for step in steps:
        lo, hi = step["ts"], step["ts"] + step["dur"]
        calls = {e["args"]["correlation"] for e in complete if e.get("cat") in ("cuda_runtime", "cuda_driver")
                 and lo <= e["ts"] <= hi and "correlation" in e.get("args", {})}
        gpu = sum(e["dur"] for e in complete if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                  and e["args"].get("correlation") in calls)
        cpu = sum(e["dur"] for e in complete if e.get("name") == "attn_fwd" and e.get("cat") == "user_annotation"
                  and lo <= e["ts"] <= hi)
        rows.append((gpu, cpu))
    return rows


@pytest.fixture(scope="session")
def recorded_traces() -> list[Path]:
    assert TRACES, "the replay set under notebooks/traces is missing"
    return TRACES


@pytest.fixture(scope="session")
def browser():
    """Debian's headless Chromium through Playwright; installed by the environment (.ci/run),
    never downloaded by a test."""
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: install Debian's chromium (see .ci/run); "
                    "the tests never download a browser")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield b
        b.close()
