"""Run by a notebook's kernel as it starts (PYTHONSTARTUP, which IPython's kernel runs): import torch,
open the CUDA context, start the profiler (Kineto and CUPTI load on its first use) and Triton's timer
once, and import the book's helpers while the reader still reads the page's first lines, so that the
first code cell does not wait for them. On an H100 a kernel then takes 8 to 10 s to start, and a
page's first profiling cell 0.3 to 0.7 s instead of 4 to 6.5 s (benchmarks/results/gpu_live_32).

space/start.sh sets it for the Space's JupyterLab; benchmarks/run_notebooks.py --pool for the kernels
it starts ahead. It defines nothing in the notebook's namespace, and any failure is silent: the
notebook's own imports then do the work and show any error where the reader sees it. An interactive
python outside a kernel (a terminal's) skips it."""


def _start_the_profiler(torch) -> None:
    """The profiler's first use in a process loads Kineto and CUPTI: done once here, on one tiny
    kernel whose trace is dropped, so the page's first profile does not wait for it."""
    import warnings
    from torch.profiler import ProfilerActivity, profile
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            torch.ones(1, device="cuda").add_(1)
            torch.cuda.synchronize()


def _start_the_timer(torch) -> None:
    """triton.testing.do_bench, the pages' independent timer, starts Triton's CUDA driver on its first
    use (built once per machine, loaded once per process): done here on one tiny op."""
    try:
        from triton.testing import do_bench
    except ImportError:   # no Triton: the pages time with CUDA events alone
        return
    x = torch.ones(1, device="cuda")
    do_bench(lambda: x.add_(1), warmup=1, rep=1)
    torch.cuda.empty_cache()   # do_bench's buffer for clearing L2 goes back


def _warm_up() -> None:
    import sys
    if "ipykernel" not in sys.modules:   # a terminal's python: not a notebook's kernel, nothing to do
        return
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.init()
            _start_the_profiler(torch)
            _start_the_timer(torch)
        import helpers  # noqa: F401
        import plotly.graph_objects  # noqa: F401
    except Exception:  # noqa: BLE001 - a kernel must start whatever this finds
        pass


_warm_up()
del _warm_up, _start_the_profiler, _start_the_timer
