"""``tutor check --set A --set B`` checks the exercises of both sets, in the catalog's order."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import tutor.cli.author
from tutor.cli import main
from tutor.store.catalog_cache import load_catalog


class _Idle:
    """A runner that is never asked to run: the checks themselves are replaced below."""

    device = "cpu"

    def close(self) -> None:
        pass


@pytest.fixture
def checked(monkeypatch):
    """The ids ``tutor check`` ran, each run reported as a fault that showed (nothing actually runs)."""
    ran: list[str] = []

    def in_order(cat, runners, exercises):
        for ex in exercises:
            ran.append(ex.id)
            yield ex, SimpleNamespace(status="ok", clean=None, faulted=None, differs=True, duration_s=0.0,
                                      device="cpu", error=None, time_limit=None, observed=None)

    monkeypatch.setattr(tutor.cli.author, "make_runner", lambda *args, **kwargs: _Idle())
    monkeypatch.setattr(tutor.cli.author, "_checked_in_order", in_order)
    return ran


def test_two_sets_are_checked_together(checked, capsys):
    cat = load_catalog()
    first, last = cat.sets[0], cat.sets[-1]
    assert main(["check", "--set", last.id, "--set", first.title.upper(), "--json", "--device", "cpu"]) == 0
    wanted = [e.id for e in cat.exercises if e.set in (first.id, last.id)]
    assert checked == wanted and len(wanted) == len(first.exercises) + len(last.exercises)
    assert json.loads(capsys.readouterr().out)["total"] == len(wanted)


def test_one_set_is_still_one_set_and_an_unknown_one_is_refused(checked, capsys):
    cat = load_catalog()
    assert main(["check", "--set", cat.sets[1].id, "--json", "--device", "cpu"]) == 0
    assert checked == [e.id for e in cat.sets[1].exercises]
    capsys.readouterr()
    assert main(["check", "--set", cat.sets[1].id, "--set", "no-such-set", "--json", "--device", "cpu"]) == 2
    assert "there is no set 'no-such-set'" in json.loads(capsys.readouterr().out)["error"]
