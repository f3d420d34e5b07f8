"""Independent reference for the univariate OLS check, using only Python's standard library.

Reads a project (data/cohort.csv, data/dictionary.json, outputs/split.csv) and writes the
model report the check expects to outputs/model.json, computed with statistics.linear_regression
and statistics.fmean. Usage: python3 reference.py PROJECT_DIR PREDICTOR
"""
import csv
import json
import math
import statistics
import sys

project, predictor = sys.argv[1], sys.argv[2]
dictionary = json.load(open(f"{project}/data/dictionary.json"))
rows = list(csv.DictReader(open(f"{project}/data/cohort.csv")))
split = {r["key"]: r["partition"] for r in csv.DictReader(open(f"{project}/outputs/split.csv"))}
key, group, outcome = dictionary["primary_key"], dictionary["group"], dictionary["outcome"]

train = [r for r in rows if split[r[key]] == "train"]
held = [r for r in rows if split[r[key]] == "held_out"]
x = [float(r[predictor]) for r in train]
y = [float(r[outcome]) for r in train]
fit = statistics.linear_regression(x, y)
mean_y = statistics.fmean(y)
predictions = [{"key": r[key], "predicted": fit.intercept + fit.slope * float(r[predictor])} for r in held]
errors = [float(r[outcome]) - p["predicted"] for r, p in zip(held, predictions)]
comparator = [float(r[outcome]) - mean_y for r in held]
logo = []
for g in sorted({r[group] for r in train}):
    rest = [r for r in train if r[group] != g]
    f = statistics.linear_regression([float(r[predictor]) for r in rest], [float(r[outcome]) for r in rest])
    logo.append({"group": g, "slope": f.slope})
report = {
    "outcome": outcome,
    "predictor": predictor,
    "slope": fit.slope,
    "intercept": fit.intercept,
    "held_out_predictions": predictions,
    "held_out_rmse": math.sqrt(statistics.fmean([e * e for e in errors])),
    "mean_comparator_rmse": math.sqrt(statistics.fmean([e * e for e in comparator])),
    "leave_one_group_out": logo,
}
json.dump(report, open(f"{project}/outputs/model.json", "w"), indent=1)
