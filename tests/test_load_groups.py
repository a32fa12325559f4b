"""The whole suite (`python -m pytest`) runs on two pytest-xdist workers with `--dist loadgroup`,
chosen by tests/conftest.py, not on the command line. A worker parses the command line again, so
that choice must be handed to it (conftest's `pytest_configure_node`): without it no test id
carries its group, and each page's checks, each module fixture (three Inductor compiles in
test_fx_cache) and the book group were split between the workers and paid twice.

Run inside the whole suite (or `python -m pytest -k load_group`), this test is on a worker and
must carry its group in its id; run in one process, there is no group to carry."""
import pytest

GROUP = "module-tests/test_load_groups.py"


@pytest.fixture(scope="module")
def shared() -> dict:
    return {}   # a module fixture of its own: conftest puts the module in one load group


def test_a_whole_suite_worker_carries_its_load_group(request, shared):
    workerinput = getattr(request.config, "workerinput", None)
    if workerinput is None:
        pytest.skip("one process (-n 0, or tests named on the command line): no load groups to keep")
    if not workerinput.get("attention_profiled_loadgroup"):
        pytest.skip("this run chose its own --dist on the command line")
    assert request.node.nodeid.endswith("@" + GROUP), (
        f"{request.node.nodeid}: the worker did not get the suite's loadgroup; every xdist_group is ignored")
