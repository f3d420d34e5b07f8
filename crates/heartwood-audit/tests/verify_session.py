#!/usr/bin/env python3
"""Independent verifier for a Heartwood session directory or export bundle.

Uses only the standard library's hashlib and json, so anyone can audit a session without
Heartwood. Usage: verify_session.py DIR  (a .heartwood/sessions/<id>/ directory or an export
bundle). Prints {"count", "terminal_hash", "merkle_root"} as JSON and exits 0 when the session
is intact; prints the first problem and exits 1 otherwise. The format is described in
docs/journal-format.md.
"""
import hashlib
import json
import os
import sys

RECORD_KEYS = {"event_sha256", "hash", "prev", "seq", "time", "type"}


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        raise ValueError(f"{os.path.basename(path)}: last line is incomplete (torn tail)")
    return data.split(b"\n")[:-1] if data else []


def merkle_root(leaves):
    """RFC 6962 Merkle tree hash over the record hashes."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + merkle_root(leaves[:k]) + merkle_root(leaves[k:])).digest()


def verify(directory):
    with open(os.path.join(directory, "meta.json"), "rb") as f:
        session = json.load(f)["id"]
    prev = hashlib.sha256(b"heartwood-audit-v1\x00" + session.encode("utf-8")).digest()
    events = read_lines(os.path.join(directory, "events.jsonl"))
    audit = read_lines(os.path.join(directory, "audit.jsonl"))
    if len(events) != len(audit):
        raise ValueError(f"{len(events)} events but {len(audit)} audit records")
    leaves = []
    for seq, (event_line, record_line) in enumerate(zip(events, audit), start=1):
        event = json.loads(event_line)
        record = json.loads(record_line)
        where = f"line {seq}"
        if set(record) != RECORD_KEYS:
            raise ValueError(f"audit.jsonl {where}: unexpected fields {sorted(record)}")
        if canonical(record) != record_line:
            raise ValueError(f"audit.jsonl {where}: record is not canonical JSON")
        if event.get("seq") != seq or record["seq"] != seq:
            raise ValueError(f"{where}: sequence number is not {seq}")
        if hashlib.sha256(event_line).hexdigest() != record["event_sha256"]:
            raise ValueError(f"events.jsonl {where}: event bytes do not match event_sha256")
        if event.get("type") != record["type"] or event.get("time") != record["time"]:
            raise ValueError(f"{where}: type or time differ between event and record")
        if record["prev"] != prev.hex():
            raise ValueError(f"audit.jsonl {where}: record does not link to the previous hash")
        body = {key: value for key, value in record.items() if key != "hash"}
        digest = hashlib.sha256(prev + canonical(body)).digest()
        if digest.hex() != record["hash"]:
            raise ValueError(f"audit.jsonl {where}: record hash does not match its contents")
        prev = digest
        leaves.append(digest)
    result = {"count": len(leaves), "terminal_hash": prev.hex(), "merkle_root": merkle_root(leaves).hex()}
    checkpoint_path = os.path.join(directory, "checkpoint.json")
    if os.path.exists(checkpoint_path):
        with open(checkpoint_path, "rb") as f:
            checkpoint = json.load(f)
        expected = {key: checkpoint[key] for key in ("count", "terminal_hash", "merkle_root")}
        if expected != result:
            raise ValueError(f"bundle does not match its checkpoint {expected}")
    return result


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        print(json.dumps(verify(sys.argv[1])))
    except (ValueError, KeyError, OSError) as error:
        print(f"not intact: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
