"""Any trace torch.profiler wrote, loaded as the `Profile` every chapter uses: `load_trace(path)`.

`.json` or `.json.gz` (told apart by the file's first bytes, not its name); with or without
`ProfilerStep#` rows; with work on several threads; with or without our `provenance` dict (without
it, the GPU's facts come from the trace's own `deviceProperties`, its date from
`baseTimeNanoseconds`). What cannot be read raises a `TraceError` that names the file and says
what is wrong; a trace without GPU events loads, with a warning, for its CPU side.
"""
from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import warnings
import zlib
from collections import Counter
from pathlib import Path

from ..core import trace
from ..core.errors import TraceError
from ..core.profile import Profile, Provenance
from ..core.progress import progress

# a file this large (bytes on disk) gets a progress bar while it is read and parsed
PROGRESS_BYTES = 8 * 1024 * 1024
CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
# what a trace torch.profiler wrote is made of: one of these in a complete ("X") event at least
KINETO_CATEGORIES = {*trace.CPU_CATEGORIES, *trace.LAUNCH_CATEGORIES, *trace.GPU_CATEGORIES,
                     "python_function", "gpu_user_annotation", "cuda_profiler_range"}
PROVENANCE_FIELDS = ("gpu", "capability", "sm_count", "driver", "torch", "cuda", "cudnn", "date", "command")


def _read_bytes(path: Path, show: bool | None) -> bytes:
    size = path.stat().st_size
    with open(path, "rb") as raw, progress(size, f"reading {path.name}", "B",
                                           enabled=size >= PROGRESS_BYTES if show is None else show,
                                           scale=True) as bar:
        compressed = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        source = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        chunks, done = [], 0
        try:
            while chunk := source.read(CHUNK):
                chunks.append(chunk)
                bar.update(raw.tell() - done)
                done = raw.tell()
        except EOFError as err:
            raise TraceError(f"{path}: the gzip file ends early, it is truncated ({err}). Copy or "
                             f"download it again, whole.") from err
        except (gzip.BadGzipFile, zlib.error, OSError) as err:
            raise TraceError(f"{path}: the gzip data is corrupt ({err}). Copy or download it again.") from err
    return b"".join(chunks)


def read_document(path: str | Path, show_progress: bool | None = None) -> dict:
    """The trace file's JSON document, checked to be a chrome trace with a list of events."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file. torch.profiler writes one with "
                         f"`prof.export_chrome_trace('trace.json')` or `tensorboard_trace_handler`.")
    if path.is_dir():
        found = sorted(p.name for p in path.glob("*.json*"))[:5]
        raise TraceError(f"{path} is a folder: pass one trace file"
                         + (f" (it holds {', '.join(found)})." if found else "."))
    data = _read_bytes(path, show_progress)
    if not data.strip():
        raise TraceError(f"{path} is empty: 0 bytes of JSON. The profiler wrote nothing there.")
    try:
        with trace.paused_gc():
            document = json.loads(data)
    except UnicodeDecodeError as err:
        raise TraceError(f"{path} is not a text file of JSON (byte {err.start} is not UTF-8): "
                         f"not a trace torch.profiler wrote.") from err
    except json.JSONDecodeError as err:
        # the document stops mid-way: at its last byte, or inside a string that never closes
        ends_early = err.pos >= len(data.rstrip()) - 1 or err.msg.startswith("Unterminated string")
        why = "it ends early, truncated" if ends_early else f"line {err.lineno}, column {err.colno}: {err.msg}"
        raise TraceError(f"{path} is not valid JSON ({why}). A trace torch.profiler wrote is a JSON "
                         f"document; copy it again, whole.") from err
    if isinstance(document, list):
        raise TraceError(f"{path} is a bare JSON list: torch.profiler writes an object with "
                         f"'traceEvents' (and 'deviceProperties', ...). Not a Kineto trace.")
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        keys = ", ".join(list(document)[:8]) if isinstance(document, dict) else type(document).__name__
        raise TraceError(f"{path} is JSON, but not a chrome trace: it has no 'traceEvents' list "
                         f"(it holds: {keys}). Not a trace torch.profiler wrote.")
    return document


def _check_events(path: Path, events: list, parsed: trace.Parsed) -> None:
    if not events:
        raise TraceError(f"{path} holds no events: an empty trace. Was the code run inside the "
                         f"`with profile(...)` block, and did the schedule reach an active step "
                         f"(call `prof.step()` once per step)?")
    if parsed.host["name"] or parsed.calls["name"] or parsed.gpu["name"] or not parsed.steps.empty:
        return  # ops, launches or GPU events: a Kineto trace
    complete = Counter(e.get("cat") for e in events if isinstance(e, dict) and e.get("ph") == "X")
    if not set(complete) & KINETO_CATEGORIES:
        seen = ", ".join(f"{c} ({n})" for c, n in complete.most_common(5)) or "none"
        raise TraceError(f"{path} is a chrome trace, but not one torch.profiler wrote: none of its "
                         f"{len(events)} events is a PyTorch op, a CUDA launch or a GPU event "
                         f"(complete events by category: {seen}).")


def _date(document: dict, parsed: trace.Parsed) -> str:
    base = document.get("baseTimeNanoseconds")
    firsts = [min(x) for x in (parsed.host["start_us"], parsed.calls["start_us"], parsed.gpu["start_us"]) if x]
    if not isinstance(base, (int, float)) or not firsts:
        return "unknown"
    seconds = (base + min(firsts) * 1e3) / 1e9
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat(timespec="seconds")


def _version(code) -> str:
    """CUDA's integer versions (12080) as 12.8."""
    if isinstance(code, int) and code > 1000:
        return f"{code // 1000}.{code % 1000 // 10}"
    return "unknown"


def provenance_of(document: dict, path: Path, name: str | None, parsed: trace.Parsed) -> Provenance:
    """Our provenance where the trace has one; else what the trace itself says about its GPU."""
    ours = document.get("provenance") if isinstance(document.get("provenance"), dict) else {}
    saw_gpu = bool(parsed.gpu["name"])
    devices = document.get("deviceProperties") or []
    device = devices[0] if devices and isinstance(devices[0], dict) else {}
    from_trace = {
        "gpu": device.get("name", "unknown" if saw_gpu else "no GPU (CPU only)"),
        "capability": (f"{device['computeMajor']}.{device['computeMinor']}"
                       if "computeMajor" in device and "computeMinor" in device else "unknown"),
        "sm_count": device.get("numSms", "unknown"),
        "driver": "unknown", "torch": "unknown", "cuda": _version(document.get("cuda_runtime_version")),
        "cudnn": "unknown", "date": _date(document, parsed) if "date" not in ours else "",
        "command": "unknown",
    }
    fields = {k: ours.get(k, from_trace[k]) for k in PROVENANCE_FIELDS}
    known = set(Provenance.__dataclass_fields__)
    stage = name or ours.get("stage") or ours.get("name") or path.name.split(".")[0]
    shape = ours.get("shape") if isinstance(ours.get("shape"), dict) and "stage" in ours else {}
    optional = {k: v for k, v in ours.items()
                if k in known and k not in {*PROVENANCE_FIELDS, "stage", "shape", "mode", "source", "extra"}}
    extra = {k: v for k, v in ours.items() if k not in known and k != "name"}
    extra |= ours.get("extra") or {}
    extra["facts_from"] = "provenance" if ours else "the trace's deviceProperties"
    optional["cupti"] = saw_gpu
    return Provenance(stage=stage, shape=shape, mode="replay", source="trace", extra=extra,
                      **fields, **optional)


def find_annotation(prof: Profile) -> str | None:
    """The `record_function` name that wraps each step's work: named by the provenance, else the
    one user annotation that occurs exactly once in every step, outside any other op (an
    optimizer's own annotations sit inside the step's); None if there is no such one."""
    host = prof._parsed.host
    names = {n for n, c in zip(host["name"], host["category"]) if c == "user_annotation"}
    named = prof.provenance.extra.get("annotation")
    if named and named in names:
        return named
    steps = prof._parsed.steps
    if steps.empty or not names:
        return None
    ops = trace.cpu_ops(prof._parsed, None)
    outer = ops[(ops["category"] == "user_annotation") & (ops["depth"] == 0)]
    per_step = outer.groupby("name")["step"].agg(lambda s: sorted(s.dropna().astype(int).tolist()))
    once = [n for n, found in per_step.items() if found == sorted(int(s) for s in steps["step"])]
    return once[0] if len(once) == 1 else None


def load_trace(path: str | Path, annotation: str | None = "auto", name: str | None = None,
               progress: bool | None = None, quiet: bool = False) -> Profile:
    """Load any chrome trace torch.profiler wrote (`.json` or `.json.gz`) as a `Profile`.

    `annotation`: the `record_function` region the CPU tables look inside; "auto" takes the one
    the provenance names, else the annotation found once in every step, else the whole step
    (None). `name` labels the profile in tables and charts (default: the provenance's, else the
    file's name). A progress bar shows while a large file is read (`progress=False`: never)."""
    path = Path(path)
    document = read_document(path, progress)
    events = document["traceEvents"]
    try:
        parsed = trace.parse(events)
    except trace.MalformedEvent as err:
        raise TraceError(f"{path} is not a usable trace: {err}.") from err
    except (AttributeError, TypeError) as err:  # an event that is not a JSON object
        raise TraceError(f"{path} is not a trace torch.profiler wrote: its events are not all "
                         f"JSON objects ({type(err).__name__}: {err}).") from err
    _check_events(path, events, parsed)
    saw_gpu = bool(parsed.gpu["name"])
    metadata = {k: v for k, v in document.items() if k not in ("traceEvents", "provenance")}
    prof = Profile(events, provenance_of(document, path, name, parsed), path, None, metadata)
    prof.__dict__["_parsed"] = parsed  # the cached_property's slot: parsed once, above
    if annotation == "auto":
        annotation = find_annotation(prof)
    elif annotation is not None and annotation not in prof._parsed.host["name"]:
        found = sorted({n for n, c in zip(prof._parsed.host["name"], prof._parsed.host["category"])
                        if c == "user_annotation"})[:8]
        raise TraceError(f"{path} has no annotation {annotation!r}; its record_function regions are: "
                         f"{', '.join(found) or 'none'}. Pass one of them, or annotation=None for whole steps.")
    prof.annotation = annotation
    if not saw_gpu:
        warnings.warn(f"{path} holds no GPU events (kernels, memcpys, memsets): it was recorded "
                      f"without ProfilerActivity.CUDA, on a machine without a GPU, or CUPTI saw "
                      f"nothing. Its CPU ops load; the GPU views have nothing to show.",
                      RuntimeWarning, stacklevel=2)
    if not quiet:
        print(prof.banner())
    return prof
