"""FlashAttention-2 from the Hugging Face Hub, through the `kernels` library: loading it, and the
hooks of the hub_flash stage.

    from helpers.core import hub_kernel
    flash_attn = hub_kernel.load_flash_attn2()   # get_kernel("kernels-community/flash-attn2", version=3)
    out = flash_attn.flash_attn_func(q, k, v, causal=True)   # q, k, v: [batch, seq, heads, head_dim]

Load the kernel the way a reader's code would, with the pinned version, and when that fails say
why in one message: the real exception from `kernels` / `huggingface_hub` (walked down to its
root cause, since `kernels` wraps a dropped connection in a "could not verify publisher trust"
ValueError), and the ways out (network, HF_HUB_OFFLINE and the cache, a local kernel through
LOCAL_KERNELS or `kernels.get_local_kernel`). The message travels as StageUnavailable, so
`profile_stage("hub_flash")` falls back to the replay and prints it.

The stage registry names this module as hub_flash's hook: `setup` loads the kernel outside the
forward, `forward` calls it. The page's comparison with SDPA's FlashAttention-2 lives in
helpers/chapters/hub_flash.py; the local build of the kernel in tools/build_local_flash_attn.py.
"""
from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from . import config
from .errors import StageUnavailable

HUB_REPO = "kernels-community/flash-attn2"
HUB_VERSION = 3            # get_kernel(HUB_REPO, version=HUB_VERSION): the Hub branch "v3"
KERNELS_VERSION = "0.17.2"  # pinned in requirements.txt; get_kernel needs version= or revision=
STAGE = "hub_flash"
FIX = ("To run it live, give this machine access to the Hugging Face Hub and leave HF_HUB_OFFLINE "
       "unset; offline, load the kernel once while online so that it is in the Hugging Face cache, "
       "then HF_HUB_OFFLINE=1 reads it from there; or use a local build of the kernel: "
       f"LOCAL_KERNELS={HUB_REPO}=/path/to/kernel (a folder holding build/<variant>/) makes "
       "get_kernel load it, as does kernels.get_local_kernel(Path('/path/to/kernel')), or "
       "helpers.core.hub_kernel.load_flash_attn2(local='/path/to/kernel').")


# --- loading ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Loaded:
    """Where the module came from, as `kernels` resolved it."""

    how: str                 # "Hub", "local kernel (LOCAL_KERNELS)" or "local kernel (get_local_kernel)"
    repo: str
    revision: str | None     # the Hub commit, for a Hub kernel
    variant: str             # the build variant folder, e.g. torch211-cxx11-cu130-x86_64-linux
    path: str
    build: dict = field(default_factory=dict)  # build-info.json of a local build

    @property
    def via(self) -> str:
        if self.how == "Hub":
            return f"kernels.get_kernel({self.repo!r}, version={HUB_VERSION})"
        if "LOCAL_KERNELS" in self.how:
            return f"kernels.get_kernel({HUB_REPO!r}, version={HUB_VERSION}) with LOCAL_KERNELS"
        return "kernels.get_local_kernel"

    @property
    def label(self) -> str:
        if self.build.get("built"):
            return f"{self.build['built']}, loaded via {self.via} (variant {self.variant})"
        if self.how == "Hub":
            return f"{self.repo} from the Hugging Face Hub, revision {self.revision}, variant {self.variant}"
        return f"{self.repo}, {self.how}, variant {self.variant} ({self.path})"


_modules: dict[tuple, tuple[ModuleType, Loaded]] = {}


def load_flash_attn2(version: int | None = HUB_VERSION, *, revision: str | None = None,
                     local: str | Path | None = None) -> ModuleType:
    """The FlashAttention-2 kernel module, through `kernels`; StageUnavailable says why not.

    `local`: a local kernel folder, loaded with kernels.get_local_kernel. Otherwise
    get_kernel(HUB_REPO, version=...) (or revision=...), which honours LOCAL_KERNELS."""
    return _load(version, revision, local)[0]


def loaded_from(version: int | None = HUB_VERSION, *, revision: str | None = None,
                local: str | Path | None = None) -> Loaded:
    """Where load_flash_attn2 (same arguments) got its module from."""
    return _load(version, revision, local)[1]


def _load(version, revision, local) -> tuple[ModuleType, Loaded]:
    if revision is not None:
        version = None
    key = (version, revision, str(local) if local else None, config.local_kernels())
    if key in _modules:
        return _modules[key]
    try:
        import kernels
    except ImportError as err:
        raise StageUnavailable(
            f"Stage {STAGE!r} can't load FlashAttention-2 from the Hub: the `kernels` library is not "
            f"installed ({type(err).__name__}: {err}). Install it with `pip install "
            f"kernels=={KERNELS_VERSION}` (pinned in requirements.txt), or replay the recorded "
            f"trace (mode='replay').") from err
    call = (f"kernels.get_local_kernel(Path({str(local)!r}))" if local else
            f"kernels.get_kernel({HUB_REPO!r}, " +
            (f"revision={revision!r})" if revision else f"version={version})"))
    try:
        if local:
            module = kernels.get_local_kernel(Path(local))
        elif revision:
            module = kernels.get_kernel(HUB_REPO, revision=revision)
        else:
            module = kernels.get_kernel(HUB_REPO, version=version)
    except Exception as err:  # every failure of the library becomes one message with the fix
        raise StageUnavailable(explain(err, call)) from err
    if not hasattr(module, "flash_attn_func"):
        raise StageUnavailable(f"Stage {STAGE!r}: {call} loaded {module.__name__}, which has no "
                               f"flash_attn_func; is it the FlashAttention-2 kernel?")
    _modules[key] = module, _describe(module, local)
    return _modules[key]


def _describe(module: ModuleType, local) -> Loaded:
    import kernels
    entry = next((k for k in kernels.get_loaded_kernels() if k.module is module), None)
    init = Path(module.__file__ or ".").resolve()
    variant = init.parent if (init.parent / "metadata.json").exists() else init.parent.parent
    build_info = variant / "build-info.json"
    build = json.loads(build_info.read_text()) if build_info.exists() else {}
    if entry is not None and entry.repo_info is not None:
        return Loaded("Hub", entry.repo_info.repo_id, entry.repo_info.revision, variant.name,
                      str(variant), build)
    how = "local kernel (get_local_kernel)" if local else "local kernel (LOCAL_KERNELS)"
    return Loaded(how, str(local) if local else HUB_REPO, None, variant.name, str(variant), build)


def _chain(err: BaseException) -> list[BaseException]:
    seen, out = set(), []
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        out.append(err)
        err = err.__cause__ or err.__context__
    return out


def _named(err: BaseException) -> str:
    mod = type(err).__module__
    name = type(err).__name__ if mod in ("builtins", "__main__") else f"{mod}.{type(err).__name__}"
    return f"{name}: {err}"


def _is_network(err: BaseException) -> bool:
    mod = type(err).__module__.split(".")[0]
    return (mod in ("httpx", "httpx2", "httpcore", "httpcore2", "requests", "urllib3", "socket", "ssl")
            or isinstance(err, (ConnectionError, TimeoutError))
            or type(err).__name__ in ("ConnectError", "ConnectTimeout", "ReadTimeout", "ProxyError",
                                      "gaierror", "OfflineModeIsEnabled"))


def explain(err: BaseException, call: str = f"get_kernel({HUB_REPO!r}, version={HUB_VERSION})") -> str:
    """One message: what failed, its real cause (the root of the exception chain), the fix."""
    chain = _chain(err)
    top, root = chain[0], chain[-1]
    text = " ".join(str(e) for e in chain)
    said = _named(top) + (f" (caused by {_named(root)})" if root is not top else "")
    try:
        from huggingface_hub import constants
        offline = bool(constants.HF_HUB_OFFLINE)
    except ImportError:
        offline = False
    network = [e for e in chain if _is_network(e)]
    if network:
        first = network[0]
        cause = f"the Hugging Face Hub could not be reached from this machine ({_named(first)}"
        if root is not first:
            cause += f", at the root {_named(root)}"
        if first is not top:
            cause += f"; `kernels` reports it as: {top}"
        cause += ")"
    elif offline and ("local cache" in text or "offline" in text.lower()):
        cause = (f"HF_HUB_OFFLINE is set, so `kernels` looks only in the local Hugging Face cache, "
                 f"and {HUB_REPO} (version {HUB_VERSION}) is not there ({said})")
    elif "Cannot find a build variant" in text:
        cause = (f"the kernel has no build for this machine's torch / CUDA / platform "
                 f"(torch {_torch_version()}, {platform.machine()}-{platform.system().lower()}); "
                 f"`kernels` listed the variants it rejected: {said}")
    elif "does not support the current device" in text:
        cause = f"the kernel's build does not include this GPU's architecture ({said})"
    elif "Version" in text and "not found" in text:
        cause = f"the Hub has no version {HUB_VERSION} of {HUB_REPO} ({said})"
    else:
        cause = said
    return (f"Stage {STAGE!r} can't load FlashAttention-2 through `kernels`: {call} failed because "
            f"{cause}. {FIX} Until then, replay the recorded trace (mode='replay').")


def _torch_version() -> str:
    try:
        import torch
        return f"{torch.__version__}, CUDA {torch.version.cuda}"
    except ImportError:
        return "not installed"


def status() -> str:
    """Can this process load the Hub kernel? One line: where it came from, or why not."""
    try:
        return f"FlashAttention-2 loaded through `kernels`: {loaded_from().label}."
    except StageUnavailable as err:
        return str(err)


# --- the stage's hooks (helpers.core.stages names this module for hub_flash) ----------------------------------------------------------------------------------

STAGE_SOURCE = f"""flash_attn = get_kernel("{HUB_REPO}", version={HUB_VERSION})  # once, outside the forward
# q, k, v made as [batch, seq, heads, head_dim], the layout FlashAttention takes
out = flash_attn.flash_attn_func(q, k, v, causal=True)"""


def setup(inputs: dict) -> None:
    """Load the kernel, and lay q, k, v out as [batch, seq, heads, head_dim], once, outside the forward."""
    inputs["flash_attn_func"] = load_flash_attn2().flash_attn_func
    for name in ("q", "k", "v"):
        inputs[f"{name}_bshd"] = inputs[name].transpose(1, 2).contiguous()


def forward(x: dict):
    return x["flash_attn_func"](x["q_bshd"], x["k_bshd"], x["v_bshd"], causal=x["shape"].causal)
