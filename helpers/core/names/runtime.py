"""CUDA runtime events: Memcpy and Memset."""
from __future__ import annotations

import re


# --- CUDA runtime: memcpy and memset ------------------------------------------------------

_MEMCPY = re.compile(r"^Memcpy\s+(?P<dir>[A-Za-z]+)(?:\s*\((?P<src>[^)>-]*?)\s*->\s*(?P<dst>[^)]*?)\))?")
_MEMSET = re.compile(r"^Memset(?:\s*\((?P<where>[^)]*)\))?")
_MEMCPY_WORDS = {"DtoD": "device to device", "HtoD": "host to device", "DtoH": "device to host",
                 "HtoH": "host to host", "PtoP": "peer to peer", "DtoA": "device to array",
                 "AtoD": "array to device"}


def _runtime(text: str) -> dict | None:
    # Kineto names copies and sets the runtime does (not kernels): "Memcpy DtoD (Device -> Device)"
    m = _MEMCPY.match(text)
    if m:
        d = {"direction": m.group("dir"), "direction_words": _MEMCPY_WORDS.get(m.group("dir"))}
        if m.group("src") is not None:
            d["src_memory"], d["dst_memory"] = m.group("src").strip(), m.group("dst").strip()
        where = f" ({d['src_memory']} -> {d['dst_memory']})" if "src_memory" in d else ""
        return {"kind": "memcpy", "library": "CUDA runtime", "op": f"memcpy {m.group('dir')}",
                "details": d, "summary": f"runtime copy {m.group('dir')}{where}"}
    m = _MEMSET.match(text)
    if m:
        d = {"memory": m.group("where").strip()} if m.group("where") else {}
        return {"kind": "memset", "library": "CUDA runtime", "op": "memset", "details": d,
                "summary": "runtime memset" + (f" ({d['memory']})" if d else "")}
    return None
