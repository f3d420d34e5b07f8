"""The statistics reference Heartwood's workflow checks use, from Python: the same computation
as ``heartwood stats fit`` (least squares or logistic regression; classical, HC0-HC3 or
cluster-robust standard errors), returning the object ``stats fit --json`` prints.

    from heartwood import stats
    fit = stats.fit("data/panel.csv", outcome="invest", predictors=["value", "capital"],
                    se="cluster:firm")
    fit["coefficients"]      # [{"name": "intercept", "estimate": ..., "std_error": ...}, ...]
    fit["status"]            # "ok", or "unreliable" with fit["reason"]

``table`` is a path to a CSV file or a pandas DataFrame (written as CSV, every cell as pandas
prints it). Bad input (a missing column, a non-numeric cell, more predictors than rows) raises
``HeartwoodError`` saying what to do.
"""

import os

from ._native import _stats_fit

__all__ = ["fit"]


def fit(table, outcome, predictors, categorical=None, fixed_effects=None, intercept=True,
        se="classical", family="gaussian"):
    """Fits ``outcome ~ predictors`` (+ dummy-coded ``categorical``, absorbed
    ``fixed_effects``) on ``table``; ``se`` is ``classical``, ``hc0``..``hc3`` or
    ``cluster:COLUMN``; ``family`` is ``gaussian`` or ``binomial``."""
    if isinstance(predictors, str):
        predictors = [predictors]
    if hasattr(table, "to_csv"):
        text, is_text = table.to_csv(index=False), True
    else:
        text, is_text = os.fspath(table), False
    return _stats_fit(text, outcome, list(predictors), categorical=categorical,
                      fixed_effects=fixed_effects, intercept=intercept, se=se, family=family,
                      is_text=is_text)
