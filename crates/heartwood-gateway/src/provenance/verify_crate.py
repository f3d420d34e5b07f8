#!/usr/bin/env python3
"""Verify a Heartwood RO-Crate without Heartwood (Python 3.8+, standard library only).

    python3 verify_crate.py CRATE_DIR_OR_ZIP

Checks, and names every failure:
  1. every file the metadata lists has the SHA-256 and size it states, and no file is
     in the crate unlisted;
  2. journal/audit.jsonl is an unbroken hash chain bound to the session, and
     journal/checkpoint.json names its count, terminal hash and RFC 6962 Merkle root;
  3. each line of journal/events.jsonl is the event its audit record hashed, and every
     event the provenance rests on is there;
  4. each acceptance rests on an evaluation of the same stage and fingerprint whose checks
     all passed, over files the crate holds with exactly those digests, and the metadata
     states each acceptance and check run as the journal recorded it.
Exit status 0 when everything holds, 1 otherwise.
"""
import hashlib
import json
import os
import sys
import zipfile

CARRIED = {
    "session_registered", "workflow_started", "workflow_stage_started",
    "workflow_stage_evaluated", "workflow_stage_accepted", "workflow_budget_exhausted",
    "workflow_reproduction_prepared", "workflow_reproduction_completed",
    "workflow_correction_bound", "workflow_cancelled", "decision_recorded", "usage_recorded",
}
COMPLETED = "http://schema.org/CompletedActionStatus"


def sha(b):
    return hashlib.sha256(b).hexdigest()


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def read_crate(path):
    files = {}
    if os.path.isdir(path):
        for root, _dirs, names in os.walk(path):
            for name in names:
                full = os.path.join(root, name)
                rel = os.path.relpath(full, path).replace(os.sep, "/")
                with open(full, "rb") as f:
                    files[rel] = f.read()
    else:
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                if not name.endswith("/"):
                    files[name] = z.read(name)
    return files


def merkle_root(leaves):
    if not leaves:
        return sha(b"")
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).hexdigest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    left, right = merkle_root(leaves[:k]), merkle_root(leaves[k:])
    return hashlib.sha256(b"\x01" + bytes.fromhex(left) + bytes.fromhex(right)).hexdigest()


def is_local(ident):
    return not (ident.startswith("#") or "://" in ident or ident in ("./", "ro-crate-metadata.json"))


def nested_crates(files):
    out = []
    for name in sorted(files):
        if name.endswith("ro-crate-metadata.json") and name != "ro-crate-metadata.json":
            prefix = name[: -len("ro-crate-metadata.json")]
            if not any(prefix.startswith(p) for p in out):
                out.append(prefix)
    return out


def check_files(files, graph, nested, problems):
    listed = set()
    for ident, e in graph.items():
        if not is_local(ident) or "sha256" not in e:
            continue
        listed.add(ident)
        if ident not in files:
            problems.append("%s: listed in the metadata but missing from the crate" % ident)
            continue
        if sha(files[ident]) != e["sha256"]:
            problems.append("%s: changed (its SHA-256 is %s, the metadata states %s)"
                            % (ident, sha(files[ident]), e["sha256"]))
        if str(len(files[ident])) != str(e.get("contentSize")):
            problems.append("%s: %d bytes, the metadata states %s"
                            % (ident, len(files[ident]), e.get("contentSize")))
    for name in sorted(files):
        delegated = any(name.startswith(p) for p in nested)
        if name != "ro-crate-metadata.json" and name not in listed and not delegated:
            problems.append("%s: in the crate but not described (with a digest) in the metadata" % name)


def check_chain(files, problems):
    meta = json.loads(files["journal/meta.json"])
    prev = hashlib.sha256(b"heartwood-audit-v1\x00" + meta["id"].encode()).hexdigest()
    records = []
    for k, line in enumerate(files["journal/audit.jsonl"].split(b"\n")[:-1], start=1):
        rec = json.loads(line)
        if canonical(rec) != line:
            problems.append("journal/audit.jsonl line %d: not canonical JSON" % k)
        body = {key: v for key, v in rec.items() if key != "hash"}
        if rec.get("seq") != k:
            problems.append("journal/audit.jsonl line %d: seq %r" % (k, rec.get("seq")))
        if rec.get("prev") != prev:
            problems.append("journal/audit.jsonl line %d: does not link to the record before" % k)
        if hashlib.sha256(bytes.fromhex(rec.get("prev", "")) + canonical(body)).hexdigest() != rec.get("hash"):
            problems.append("journal/audit.jsonl line %d: its hash does not match its contents" % k)
        prev = rec.get("hash", "")
        records.append(rec)
    cp = json.loads(files["journal/checkpoint.json"])
    if cp.get("session") != meta["id"] or cp.get("count") != len(records):
        problems.append("journal/checkpoint.json: names %r events of session %r, the journal holds %d of %r"
                        % (cp.get("count"), cp.get("session"), len(records), meta["id"]))
    if records and cp.get("terminal_hash") != records[-1]["hash"]:
        problems.append("journal/checkpoint.json: terminal hash differs from the journal's last record")
    root = merkle_root([bytes.fromhex(r["hash"]) for r in records])
    if cp.get("merkle_root") != root:
        problems.append("journal/checkpoint.json: Merkle root differs from the journal's (%s)" % root)
    return records


def check_events(files, records, problems):
    events, seen = [], set()
    for k, line in enumerate(files["journal/events.jsonl"].split(b"\n")[:-1], start=1):
        ev = json.loads(line)
        seq = ev.get("seq")
        if not isinstance(seq, int) or not 1 <= seq <= len(records):
            problems.append("journal/events.jsonl line %d: seq %r is not in the journal" % (k, seq))
            continue
        rec = records[seq - 1]
        if sha(line) != rec["event_sha256"] or ev.get("type") != rec["type"] or ev.get("time") != rec["time"]:
            problems.append("journal/events.jsonl line %d: event %d differs from what its audit record hashed" % (k, seq))
        seen.add(seq)
        events.append(ev)
    for rec in records:
        if rec["type"] in CARRIED and rec["seq"] not in seen:
            problems.append("journal/events.jsonl: event %d (%s) is missing" % (rec["seq"], rec["type"]))
    return events


def prop(graph, entity, name):
    for ref in entity.get("additionalProperty", []):
        p = graph.get(ref.get("@id"), {})
        if p.get("name") == name:
            return p.get("value")
    return None


def check_acceptances(graph, events, problems):
    digests = {}
    for ident, e in graph.items():
        if "sha256" in e:
            digests.setdefault(e["sha256"], set()).add(ident)
    stated = {ident for ident in graph if ident.startswith("#accept-")}
    accepted = 0
    for i, ev in enumerate(events):
        if ev["type"] != "workflow_stage_accepted":
            continue
        accepted += 1
        name = "stage %s's acceptance (event %d)" % (ev["stage"], ev["seq"])
        basis = [e for e in events[:i] if e["type"] == "workflow_stage_evaluated"
                 and e["assessment"]["stage"] == ev["stage"]
                 and e["assessment"]["fingerprint"] == ev["fingerprint"]]
        if not basis:
            problems.append("%s: no evaluation with its fingerprint" % name)
        else:
            a = basis[-1]["assessment"]
            if not a.get("eligible") or any(c["status"] != "passed" for c in a["checks"]):
                problems.append("%s: rests on checks that did not all pass" % name)
            for c in a["checks"]:
                for f in c["inspected"]:
                    d = f.get("sha256")
                    if d is None:
                        problems.append("%s: check %s read no file at %s" % (name, c["check"], f["path"]))
                    elif f["path"] not in digests.get(d, set()) and not any(
                            x.startswith("#withheld-") for x in digests.get(d, set())):
                        problems.append("%s: check %s passed %s with SHA-256 %s, which the crate does not hold"
                                        % (name, c["check"], f["path"], d))
        ident = "#accept-%d" % ev["seq"]
        entity = graph.get(ident)
        if entity is None:
            problems.append("%s: not stated in the metadata" % name)
        elif prop(graph, entity, "fingerprint") != ev["fingerprint"]:
            problems.append("%s: the metadata states another fingerprint" % name)
        stated.discard(ident)
    for ident in sorted(stated):
        problems.append("%s: an acceptance the journal does not record" % ident)
    for ev in events:
        if ev["type"] != "workflow_stage_evaluated":
            continue
        for n, c in enumerate(ev["assessment"]["checks"], start=1):
            e = graph.get("#check-%d-%d" % (ev["seq"], n))
            stated_pass = e is not None and e.get("actionStatus", {}).get("@id") == COMPLETED
            if e is None or stated_pass != (c["status"] == "passed"):
                problems.append("#check-%d-%d: the metadata does not state check %s as the journal recorded it (%s)"
                                % (ev["seq"], n, c["check"], c["status"]))
            if e is not None:
                instrument = e.get("instrument")
                tool = graph.get(instrument.get("@id"), {}) if isinstance(instrument, dict) else {}
                if tool.get("softwareVersion") != c.get("version"):
                    problems.append("#check-%d-%d: the metadata states check %s at version %s, the journal recorded %s"
                                    % (ev["seq"], n, c["check"], json.dumps(tool.get("softwareVersion")),
                                       json.dumps(c.get("version"))))
    return accepted


def verify_files(files):
    problems = []
    try:
        graph = {e["@id"]: e for e in json.loads(files["ro-crate-metadata.json"])["@graph"]}
    except (KeyError, ValueError, TypeError) as e:
        return ["ro-crate-metadata.json: unreadable (%s)" % e], 0, 0
    nested = nested_crates(files)
    check_files(files, graph, nested, problems)
    if "journal/meta.json" not in files and nested:
        count = accepted = 0
        for prefix in nested:
            sub = {k[len(prefix):]: v for k, v in files.items() if k.startswith(prefix)}
            p, c, a = verify_files(sub)
            problems.extend(prefix + x for x in p)
            count, accepted = count + c, accepted + a
        return problems, count, accepted
    for name in ("journal/meta.json", "journal/audit.jsonl", "journal/checkpoint.json", "journal/events.jsonl"):
        if name not in files:
            problems.append("%s: missing" % name)
            return problems, 0, 0
    try:
        records = check_chain(files, problems)
        events = check_events(files, records, problems)
        accepted = check_acceptances(graph, events, problems)
    except (ValueError, KeyError, TypeError) as e:
        problems.append("journal: unreadable (%s)" % e)
        return problems, 0, 0
    return problems, len(records), accepted


def verify(path):
    return verify_files(read_crate(path))


def main(argv):
    if len(argv) != 2:
        print("usage: python3 verify_crate.py CRATE_DIR_OR_ZIP", file=sys.stderr)
        return 2
    problems, count, accepted = verify(argv[1])
    for p in problems:
        print("FAIL " + p)
    if problems:
        return 1
    print("ok: %d journal records chained and checkpointed, every file's digest holds, "
          "%d acceptances rest on passed checks over these exact digests" % (count, accepted))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
