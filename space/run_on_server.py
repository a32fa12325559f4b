"""Run notebooks on a running Jupyter server the way JupyterLab's "Run All" does, and report.

For each notebook it opens a session on the server (so the kernel starts in the notebook's folder,
as JupyterLab's does), sends every code cell over the kernel's websocket in order, collects what
the kernel answers, stops at the first error, and shuts the session down.

    python space/run_on_server.py --url http://127.0.0.1:7860 --token-file ~/.token 02_inplace.ipynb

The notebook paths are relative to the server's root (space/start.sh serves notebooks/). It prints
one line per notebook and exits 1 if any cell raised. The tests of space/start.sh and
space/check_image.sh use it; JupyterLab itself is not needed, only the server's REST and
websocket API and jupyter_client's message format.
"""
from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_client.session import Session, json_default
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect


@dataclass
class CellRun:
    index: int
    status: str  # "ok" or "error"
    text: str  # stdout, stderr and text/plain results, in order
    mimetypes: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class NotebookRun:
    path: str
    cells: list[CellRun]
    seconds: float

    @property
    def ok(self) -> bool:
        return all(c.status == "ok" for c in self.cells)

    @property
    def text(self) -> str:
        return "\n".join(c.text for c in self.cells)


def _api(url: str, token: str, method: str = "GET", body: dict | None = None) -> dict:
    request = urllib.request.Request(url, method=method, headers={
        "Authorization": f"token {token}", "Content-Type": "application/json"},
        data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=60) as response:
        data = response.read()
    return json.loads(data) if data else {}


async def _run_cells(ws_url: str, token: str, sources: list[str], cell_timeout: float) -> list[CellRun]:
    session = Session(username="run_on_server")
    ws = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {token}"}))
    runs = []
    try:
        for index, source in enumerate(sources):
            msg = session.msg("execute_request", {"code": source, "silent": False, "store_history": True,
                                                  "user_expressions": {}, "allow_stdin": False,
                                                  "stop_on_error": True})
            msg["channel"] = "shell"
            await ws.write_message(json.dumps(msg, default=json_default))
            run, idle, replied = CellRun(index, "ok", ""), False, False
            deadline = time.monotonic() + cell_timeout
            while not (idle and replied):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"cell {index} did not finish in {cell_timeout} s")
                raw = await asyncio.wait_for(ws.read_message(), left)
                if raw is None:
                    raise ConnectionError("the kernel's websocket closed")
                if isinstance(raw, bytes):
                    continue  # binary frames carry widget buffers
                reply = json.loads(raw)
                if reply.get("parent_header", {}).get("msg_id") != msg["header"]["msg_id"]:
                    continue
                kind, content = reply["msg_type"], reply["content"]
                if kind == "stream":
                    run.text += content["text"]
                elif kind in ("display_data", "execute_result"):
                    run.mimetypes += list(content["data"])
                    run.text += content["data"].get("text/plain", "") + "\n"
                elif kind == "error":
                    run.status, run.error = "error", f"{content['ename']}: {content['evalue']}"
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
                elif kind == "execute_reply":
                    replied = True
                    if content["status"] != "ok":
                        run.status = "error"
                        run.error = run.error or f"{content.get('ename')}: {content.get('evalue')}"
            runs.append(run)
            if run.status != "ok":
                break
    finally:
        ws.close()
    return runs


def run_notebook(base_url: str, token: str, path: str, cell_timeout: float = 600) -> NotebookRun:
    """Open `path` (relative to the server's root) in a new session and run all its code cells."""
    base = base_url.rstrip("/")
    notebook = _api(f"{base}/api/contents/{path}", token)["content"]
    sources = [c["source"] for c in notebook["cells"] if c["cell_type"] == "code"]
    started = time.monotonic()
    created = _api(f"{base}/api/sessions", token, "POST", {
        "path": path, "name": Path(path).name, "type": "notebook", "kernel": {"name": "python3"}})
    kernel = created["kernel"]["id"]
    ws_url = base.replace("http", "ws", 1) + f"/api/kernels/{kernel}/channels?session_id={uuid.uuid4().hex}"
    try:
        # A thread of its own: the caller may already run an event loop (Playwright's sync API does).
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            cells = pool.submit(asyncio.run, _run_cells(ws_url, token, sources, cell_timeout)).result()
    finally:
        _api(f"{base}/api/sessions/{created['id']}", token, "DELETE")
    return NotebookRun(path, cells, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token-file", required=True, type=Path)
    parser.add_argument("notebooks", nargs="+")
    args = parser.parse_args(argv)
    token = args.token_file.read_text().strip()
    failed = 0
    for path in args.notebooks:
        run = run_notebook(args.url, token, path)
        last = run.cells[-1] if run.cells else None
        verdict = "ok" if run.ok else f"FAILED at cell {last.index}: {last.error}"
        print(f"{path}: {len(run.cells)} code cells, {run.seconds:.1f} s, {verdict}", flush=True)
        failed += not run.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
