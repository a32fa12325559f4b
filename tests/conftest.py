import gzip
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


def raw_document(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def recorded_traces() -> list[Path]:
    assert TRACES, "the replay set under notebooks/traces is missing"
    return TRACES
