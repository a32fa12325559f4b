"""The one reader of a chrome trace file: `.json` or `.json.gz` (told apart by the first bytes, not
the name), parsed with the garbage collector paused, checked to be a chrome trace with a list of
events; what cannot be read raises a TraceError that names the file and says what is wrong.
Profile.load (the replay set), load_trace (any trace) and the shared-memory experiment's
recording all read through it."""
from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

from . import trace
from .errors import TraceError
from .progress import progress

# a file this large (bytes on disk) gets a progress bar while it is read and parsed
PROGRESS_BYTES = 8 * 1024 * 1024
CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


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
