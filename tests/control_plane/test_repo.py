"""Where inart's files are: a checkout's, else an installed wheel's package data."""

from __future__ import annotations

import pytest

import control_plane.repo as repo


def test_a_checkout_reads_its_own_files() -> None:
    assert repo.CHECKOUT == repo.REPO
    assert repo.P4_BUILD == repo.REPO / "p4src" / "build"
    assert (repo.PTF_SUITE / "run_ptf.py").is_file()
    # what a wheel carries is what the checkout has
    assert {repo.REPO / p for p in repo.PACKAGE_DATA} == {repo.P4_BUILD, repo.PTF_SUITE,
                                                          repo.PTF_TESTGEN}
    assert (repo.PTF_TESTGEN / "base_test.py").is_file()


def test_what_only_a_checkout_has_is_refused_by_name_when_installed(monkeypatch) -> None:
    assert repo.checkout_path("tests/x", "y") == repo.REPO / "tests" / "x"
    monkeypatch.setattr(repo, "CHECKOUT", None)
    with pytest.raises(repo.NeedsCheckout, match=r"workload 'forward' needs a checkout .*"
                                                 r"\(tests/embedded/p4/build\).*installed"):
        repo.checkout_path("tests/embedded/p4/build", "workload 'forward'")


def test_children_find_the_same_packages_whatever_their_cwd() -> None:
    env = repo.child_env(X="1")
    assert env["PYTHONPATH"].split(":")[0] == str(repo.REPO)
    assert env["PYTHONSAFEPATH"] == "1" and env["X"] == "1"
