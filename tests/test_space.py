"""The GPU Space's entry point, space/start.sh, run here: JupyterLab on the notebooks, token always on.

Each test starts it on a free localhost port (ATTN_PROFILED_HOST / ATTN_PROFILED_PORT), with its
own HOME and Jupyter config, and stops its whole process group afterwards. The Docker image
itself cannot be built here (no container engine); space/Dockerfile is checked by reading.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT

START = ROOT / "space" / "start.sh"
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


class Server:
    def __init__(self, tmp_path: Path, **env):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / "start.log"
        self.token_file = tmp_path / "secret" / "token"
        base_env = {k: v for k, v in os.environ.items()
                    if not k.startswith("JUPYTER") and k not in ("SPACE_ID", "PORT")}
        base_env.update(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            HOME=str(tmp_path / "home"),
            JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
            JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
            ATTN_PROFILED_HOST="127.0.0.1",
            ATTN_PROFILED_PORT=str(self.port),
            ATTN_PROFILED_TOKEN_FILE=str(self.token_file),
        )
        base_env.update(env)
        (tmp_path / "home").mkdir(exist_ok=True)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(["bash", str(START)], env=base_env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"start.sh exited with {self.proc.returncode}:\n{self.output()[-3000:]}")
            try:
                status, _ = get(f"{self.base}/api/status")
                if status in (200, 403):
                    return
            except OSError:
                pass
            time.sleep(0.5)
        pytest.fail(f"JupyterLab did not answer on {self.base} in {timeout} s:\n{self.output()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture
def server(tmp_path):
    started: list[Server] = []

    def start(**env) -> Server:
        s = Server(tmp_path, **env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def check_token_is_required(s: Server, token: str) -> None:
    status, _ = get(f"{s.base}/api/contents")
    assert status == 403, f"the API answered {status} without a token"
    status, _ = get(f"{s.base}/api/contents", token="not-the-token")
    assert status == 403, f"the API answered {status} to a wrong token"
    status, body = get(f"{s.base}/api/contents", token=token)
    assert status == 200, body[:500]
    listed = sorted(item["name"] for item in json.loads(body)["content"] if item["name"].endswith(".ipynb"))
    assert listed == NOTEBOOKS, "JupyterLab should start in notebooks/"


def test_generated_token_is_written_to_a_private_file_and_never_printed(server):
    s = server()
    s.wait_ready()
    token = s.token_file.read_text().strip()
    assert len(token) >= 32
    assert stat.S_IMODE(s.token_file.stat().st_mode) == 0o600
    check_token_is_required(s, token)
    out = s.output()
    assert str(s.token_file) in out, "start.sh should say where the generated token is"
    assert token not in out, "the token must not appear in the logs"


def test_token_from_the_environment(server, tmp_path):
    token = "a-space-secret-" + "0123456789abcdef" * 2
    s = server(JUPYTER_TOKEN=token, SPACE_ID="someone/attention-profiled")
    s.wait_ready()
    check_token_is_required(s, token)
    assert token not in s.output()
    assert not s.token_file.exists(), "with JUPYTER_TOKEN set nothing is generated"


def test_on_a_space_without_a_token_secret_it_refuses_to_start(server):
    s = server(SPACE_ID="someone/attention-profiled")
    assert s.proc.wait(timeout=30) == 2
    assert "JUPYTER_TOKEN" in s.output()


def test_no_configuration_turns_the_token_off():
    text = START.read_text() + (ROOT / "space" / "Dockerfile").read_text()
    assert not re.search(r"token\s*=\s*(''|\"\")", text, re.I)
    assert "disable_check_xsrf" not in text


def test_space_metadata():
    import yaml
    readme = (ROOT / "space" / "README.md").read_text()
    meta = yaml.safe_load(readme.split("---")[1])
    assert meta["sdk"] == "docker" and meta["app_port"] == 7860
    assert meta["suggested_hardware"] in {"t4-small", "t4-medium", "l4x1", "l40sx1", "a10g-small",
                                          "a10g-large", "a100-large", "h200"}
    dockerfile = (ROOT / "space" / "Dockerfile").read_text()
    assert "requirements.txt" in dockerfile and "space/start.sh" in dockerfile
    assert "EXPOSE 7860" in dockerfile
