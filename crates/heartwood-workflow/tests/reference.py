"""Independent reference for the workflow checks, in exact rational arithmetic.

Reads a project (data/cohort.csv, data/dictionary.json, outputs/split.csv) and writes the
artifacts the checks expect, every figure computed exactly with fractions.Fraction over the
values as a float program reads them (Fraction(float(field))), then rounded once to a float:

  reports/readiness.json   counts, group sizes, empty values, min/max/mean of numeric columns
  analysis/plan.json       the plan (outcome, predictor, group, split, held-out groups)
  outputs/model.json       slope, intercept, held-out predictions, RMSEs, leave-one-group-out

Usage: python3 reference.py PROJECT_DIR PREDICTOR [PLAN_PREDICTOR]
The model is fitted on PREDICTOR; the plan declares PLAN_PREDICTOR (default: PREDICTOR).
"""
import csv
import json
import math
import os
import sys
from fractions import Fraction

project, predictor = sys.argv[1], sys.argv[2]
plan_predictor = sys.argv[3] if len(sys.argv) > 3 else predictor
dictionary = json.load(open(f"{project}/data/dictionary.json"))
with open(f"{project}/data/cohort.csv", newline="") as f:
    reader = csv.DictReader(f)
    columns = reader.fieldnames
    rows = list(reader)
split = {r["key"]: r["partition"] for r in csv.DictReader(open(f"{project}/outputs/split.csv"))}
key, group, outcome = dictionary["primary_key"], dictionary["group"], dictionary["outcome"]


def exact(field):
    return Fraction(float(field))


def root(q):
    """The square root of a non-negative fraction as a float, without converting the fraction
    itself (whose value may be beyond a double's range when the root is not)."""
    if q == 0:
        return 0.0
    half = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    return math.sqrt(float(q / Fraction(4) ** half)) * 2.0 ** half


def write(path, value):
    os.makedirs(os.path.dirname(f"{project}/{path}"), exist_ok=True)
    with open(f"{project}/{path}", "w") as f:
        json.dump(value, f, indent=1)


# Readiness.
sizes = {}
for r in rows:
    sizes[r[group]] = sizes.get(r[group], 0) + 1
numeric = {}
for c in [predictor, outcome]:
    values = [exact(r[c]) for r in rows]
    numeric[c] = {
        "min": float(min(values)),
        "max": float(max(values)),
        "mean": float(sum(values) / len(values)),
    }
missing = {c: n for c in columns if (n := sum(1 for r in rows if r[c] == "")) > 0}
write("reports/readiness.json", {
    "rows": len(rows), "columns": len(columns), "group_sizes": sizes,
    "missing": missing, "numeric": numeric,
})

# The plan.
write("analysis/plan.json", {
    "outcome": outcome, "predictor": plan_predictor, "group": group,
    "split": "group_disjoint", "held_out_groups": dictionary["held_out_groups"],
})


# The model, from sufficient statistics (exact, so no cancellation to fear).
class Sums:
    def __init__(self):
        self.n, self.x, self.y, self.xx, self.xy = 0, Fraction(0), Fraction(0), Fraction(0), Fraction(0)

    def add(self, x, y, sign=1):
        self.n += sign
        self.x += sign * x
        self.y += sign * y
        self.xx += sign * x * x
        self.xy += sign * x * y

    def minus(self, other):
        out = Sums()
        out.n, out.x, out.y = self.n - other.n, self.x - other.x, self.y - other.y
        out.xx, out.xy = self.xx - other.xx, self.xy - other.xy
        return out

    def line(self):
        sxx = self.n * self.xx - self.x * self.x
        if self.n < 2 or sxx == 0:
            return None
        slope = (self.n * self.xy - self.x * self.y) / sxx
        return slope, (self.y - slope * self.x) / self.n


total, by_group = Sums(), {}
held = []
for r in rows:
    x, y = exact(r[predictor]), exact(r[outcome])
    if split[r[key]] == "train":
        total.add(x, y)
        by_group.setdefault(r[group], Sums()).add(x, y)
    else:
        held.append((r[key], x, y))
slope, intercept = total.line()
mean_y = total.y / total.n
predictions = [(k, intercept + slope * x, y) for k, x, y in held]
logo = []
for g in sorted(by_group):
    without = total.minus(by_group[g]).line()
    if without is not None:
        logo.append({"group": g, "slope": float(without[0])})
write("outputs/model.json", {
    "outcome": outcome,
    "predictor": predictor,
    "slope": float(slope),
    "intercept": float(intercept),
    "held_out_predictions": [{"key": k, "predicted": float(p)} for k, p, _ in predictions],
    "held_out_rmse": root(sum((y - p) ** 2 for _, p, y in predictions) / len(predictions)),
    "mean_comparator_rmse": root(sum((y - mean_y) ** 2 for _, _, y in held) / len(held)),
    "leave_one_group_out": logo,
})
# Not an artifact: the exact residual scale, for the tests' perturbations: the training
# residuals' root mean square, or (for a perfect fit) the training outcome's spread.
training = [(exact(r[predictor]), exact(r[outcome])) for r in rows if split[r[key]] == "train"]
residual = root(sum((y - (intercept + slope * x)) ** 2 for x, y in training) / total.n)
if residual == 0:
    residual = root(sum((y - mean_y) ** 2 for _, y in training) / total.n)
write("reference/scale.json", {"residual_scale": residual})
