"""``heartwood.stats.fit`` (issue 54): the computation ``heartwood stats fit`` and the workflow
checks run, from Python, on a path or a DataFrame-like object, checked against values computed
by statsmodels for the example project (``fixtures/projects/grunfeld-panel/outputs/model.json``,
written by ``make_projects.py`` outside Heartwood)."""

import json
import os

import pytest

import heartwood
from heartwood import stats

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
PROJECT = os.path.join(ROOT, "fixtures", "projects", "grunfeld-panel")


def _training_table(tmp_path):
    split = {}
    with open(os.path.join(PROJECT, "outputs", "split.csv")) as f:
        next(f)
        for line in f:
            key, part = line.strip().split(",")
            split[key] = part
    with open(os.path.join(PROJECT, "data", "panel.csv")) as f:
        lines = f.read().splitlines()
    kept = [lines[0]] + [l for l in lines[1:] if split[l.split(",")[0]] == "train"]
    path = tmp_path / "train.csv"
    path.write_text("\n".join(kept) + "\n")
    return path, "\n".join(kept) + "\n"


def test_a_clustered_fit_agrees_with_statsmodels(tmp_path):
    path, text = _training_table(tmp_path)
    with open(os.path.join(PROJECT, "outputs", "model.json")) as f:
        reference = json.load(f)["coefficients"]
    fit = stats.fit(path, outcome="invest", predictors=["value", "capital"], se="cluster:firm")
    assert fit["status"] == "ok", fit
    assert fit["n"] == 180 and fit["clusters"] == 9, fit
    names = [c["name"] for c in fit["coefficients"]]
    assert names == ["intercept", "value", "capital"], names
    for ours, theirs in zip(fit["coefficients"], reference):
        assert ours["estimate"] == pytest.approx(theirs["estimate"], rel=1e-9)
        assert ours["std_error"] == pytest.approx(theirs["std_error"], rel=1e-9)

    class Frame:  # what pandas offers: to_csv(index=False)
        def to_csv(self, index=True):
            assert index is False
            return text

    again = stats.fit(Frame(), outcome="invest", predictors="value", se="hc1")
    assert [c["name"] for c in again["coefficients"]] == ["intercept", "value"]


def test_bad_input_says_what_to_do(tmp_path):
    path, _ = _training_table(tmp_path)
    with pytest.raises(heartwood.HeartwoodError, match="sector"):
        stats.fit(path, outcome="invest", predictors=["sector"])
    with pytest.raises(heartwood.HeartwoodError, match="gaussian"):
        stats.fit(path, outcome="invest", predictors=["value"], family="poisson")
    with pytest.raises(heartwood.HeartwoodError, match="cannot open"):
        stats.fit(tmp_path / "absent.csv", outcome="invest", predictors=["value"])
