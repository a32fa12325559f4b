"""The session's decode recording: the replay set's decode/ folder (tools/record_decode.py).

Decode is always read from a recording, as the training chapter's memory sweep is: the whole
recording (every backend at three batches and four KV lengths, a compiled step, flex's compiles and
Nsight Compute) takes about four minutes on a GPU, too long for a page. Live on a GPU whose own
replay set has it, that set is read; else the configured set, and the line says which."""
from __future__ import annotations

from ..core.replay_set import ReplaySet
from .core import DecodeSet

NOT_RECORDED = ("Decode is not recorded in this set ({gpu}'s recordings): this page has no measurement to show, "
                "so nothing below it is drawn.")


def fetch(gpu: str | None = None, live_device: str | None = None) -> tuple[DecodeSet | None, str]:
    """(the decode recording or None, one line saying where it comes from or that there is none).
    `live_device`: the GPU this process sees, whose own replay set is read first."""
    sets = []
    if live_device and gpu is None:
        sets.append(ReplaySet.of_device(live_device))
    sets.append(ReplaySet.configured(gpu))
    for rs in sets:
        found = DecodeSet.load(rs.dir("decode"))
        if found is not None:
            live = " (decode is not measured live: its recording takes minutes)" if live_device else ""
            return found, f"Replaying the decode recording of {found.gpu}, {found.doc['provenance'].get('date', '')[:10]}{live}."
    return None, NOT_RECORDED.format(gpu=sets[-1].identity.device_name)
