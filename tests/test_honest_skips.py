"""A missing pinned tool skips a test here, and fails it in CI (CI=true); GPU tests say why they skip."""
import pytest

import conftest


def test_a_missing_pinned_tool_fails_in_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="no_such_tool_here.*CI=true"):
        conftest.require("no_such_tool_here")
    monkeypatch.setattr(conftest, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="no_such_tool_here.*is missing"):
        conftest.require("no_such_tool_here")
    assert conftest.require("json").dumps([1]) == "[1]"


def suite_conftest(pytester) -> None:
    """A conftest in pytester's folder that loads this suite's conftest as `suite_conftest` and
    takes its collection hook (the GPU skip) and markers."""
    pytester.makeconftest(f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("suite_conftest", {str(conftest.ROOT / "tests" / "conftest.py")!r})
module = importlib.util.module_from_spec(spec)
sys.modules["suite_conftest"] = module
spec.loader.exec_module(module)
pytest_collection_modifyitems = module.pytest_collection_modifyitems
def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU")
""")


def test_ci_is_read_from_the_environment(monkeypatch, pytester):
    suite_conftest(pytester)
    pytester.makepyfile(test_a="""
import suite_conftest
def test_tool():
    suite_conftest.require("no_such_tool_here")
""")
    monkeypatch.setenv("CI", "true")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0").assert_outcomes(failed=1)
    monkeypatch.setenv("CI", "")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0").assert_outcomes(skipped=1)


def test_gpu_tests_skip_only_without_cuda_and_say_so(pytester, monkeypatch):
    suite_conftest(pytester)
    pytester.makepyfile(test_g="""
import pytest
@pytest.mark.gpu
def test_needs_gpu():
    pass
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0", "-rs")
    if conftest.cuda_available():
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(skipped=1)
        result.stdout.fnmatch_lines(["*needs a CUDA GPU (torch.cuda.is_available() is False here)*"])
