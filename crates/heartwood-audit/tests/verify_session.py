#!/usr/bin/env python3
"""Independent verifier for a Heartwood session directory or export bundle.

Uses only the standard library's hashlib and json, so anyone can audit a session without
Heartwood. Usage: verify_session.py DIR  (a .heartwood/sessions/<id>/ directory or an export
bundle). Checks meta.json against the session's registration, every event and audit record,
and (in a session directory) every command receipt against the chain. Prints {"count",
"terminal_hash", "merkle_root"} as JSON and exits 0 when the session is intact; prints "not
intact" with the first problem and exits 1 otherwise, whatever the files hold. The format is described in
docs/journal-format.md.
"""
import datetime
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


META_KEYS = {"schema", "id", "created_at", "backend"}
SCHEMA_VERSION = 1
# How long before its first event a session's created_at may lie (the registration and its
# first event are written together).
CREATED_BEFORE_FIRST_EVENT_MS = 60_000


def reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def loads(line):
    """JSON as the format defines it: Python's parser also accepts NaN and Infinity."""
    return json.loads(line, parse_constant=reject_constant)


def is_int(value):
    """A JSON integer: Python's json reads `true` as a bool (an int subclass) and `2.0` as a
    float equal to 2, neither of which is a sequence number."""
    return isinstance(value, int) and not isinstance(value, bool)


def millis(timestamp):
    parsed = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return round(parsed.timestamp() * 1000)


def read_meta(directory):
    with open(os.path.join(directory, "meta.json"), "rb") as f:
        meta = loads(f.read())
    if not isinstance(meta, dict):
        raise ValueError("meta.json is not a JSON object")
    keys = set(meta)
    if not META_KEYS <= keys or not keys <= META_KEYS | {"workflow"}:
        raise ValueError(f"meta.json has unexpected or missing fields {sorted(keys)}")
    if not is_int(meta["schema"]) or not 1 <= meta["schema"] <= SCHEMA_VERSION:
        raise ValueError(f"meta.json: format version {meta['schema']!r} is not supported")
    for key in ("id", "created_at", "backend"):
        if not isinstance(meta[key], str):
            raise ValueError(f"meta.json: {key} is not a string")
    if "workflow" in meta and not isinstance(meta["workflow"], str):
        raise ValueError("meta.json: workflow is not a string")
    return meta


def check_meta(meta, first):
    """The first event is the session's registration, as meta.json describes it."""
    if first.get("type") != "session_registered":
        raise ValueError("events.jsonl line 1: the first event is not the session's registration")
    if first.get("backend") != meta["backend"] or first.get("workflow") != meta.get("workflow"):
        raise ValueError("meta.json: backend or workflow differs from the session's registration")
    time = first.get("time")
    if not isinstance(time, str):
        raise ValueError("events.jsonl line 1: time is not a string")
    before = millis(time) - millis(meta["created_at"])
    if not 0 <= before <= CREATED_BEFORE_FIRST_EVENT_MS:
        raise ValueError("meta.json: created_at is not the time of the session's registration")


def check_receipts(directory, commands):
    """Every command named on an event has exactly one receipt saying it applied, ending at the
    command's last event; no receipt claims events the chain does not give it."""
    seen = set()
    for number, line in enumerate(read_lines(os.path.join(directory, "receipts.jsonl")), start=1):
        receipt = loads(line)
        where = f"receipts.jsonl line {number}"
        if not isinstance(receipt, dict) or not isinstance(receipt.get("outcome"), dict):
            raise ValueError(f"{where}: not a receipt")
        command = receipt.get("command_id")
        if not isinstance(command, str) or command in seen:
            raise ValueError(f"{where}: missing or repeated command id")
        seen.add(command)
        outcome = receipt["outcome"]
        last = outcome.get("last_seq") if outcome.get("status") == "applied" else None
        if last is not None and (not is_int(last) or commands.get(command) != last):
            raise ValueError(f"{where}: the receipt names events the command did not record")
        if last is None and command in commands:
            raise ValueError(f"{where}: the receipt says the command recorded nothing")
    missing = sorted(set(commands) - seen)
    if missing:
        raise ValueError(f"receipts.jsonl: command {missing[0]!r} has no receipt")


def verify(directory):
    meta = read_meta(directory)
    session = meta["id"]
    prev = hashlib.sha256(b"heartwood-audit-v1\x00" + session.encode("utf-8")).digest()
    events = read_lines(os.path.join(directory, "events.jsonl"))
    audit = read_lines(os.path.join(directory, "audit.jsonl"))
    if len(events) != len(audit):
        raise ValueError(f"{len(events)} events but {len(audit)} audit records")
    if not events:
        raise ValueError("the session is registered but its record holds no events")
    leaves = []
    commands = {}
    for seq, (event_line, record_line) in enumerate(zip(events, audit), start=1):
        event = loads(event_line)
        record = loads(record_line)
        where = f"line {seq}"
        if not isinstance(event, dict):
            raise ValueError(f"events.jsonl {where}: event is not a JSON object")
        if not isinstance(record, dict) or set(record) != RECORD_KEYS:
            raise ValueError(f"audit.jsonl {where}: unexpected fields")
        if canonical(record) != record_line:
            raise ValueError(f"audit.jsonl {where}: record is not canonical JSON")
        if not is_int(event.get("seq")) or event["seq"] != seq or record["seq"] != seq:
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
        if seq == 1:
            check_meta(meta, event)
        command = event.get("command")
        if command is not None:
            if not isinstance(command, str):
                raise ValueError(f"events.jsonl {where}: command is not a string")
            commands[command] = seq
        prev = digest
        leaves.append(digest)
    result = {"count": len(leaves), "terminal_hash": prev.hex(), "merkle_root": merkle_root(leaves).hex()}
    checkpoint_path = os.path.join(directory, "checkpoint.json")
    if os.path.exists(checkpoint_path):
        with open(checkpoint_path, "rb") as f:
            checkpoint = json.load(f)
        if not isinstance(checkpoint, dict):
            raise ValueError("checkpoint.json is not a JSON object")
        expected = {key: checkpoint.get(key) for key in ("count", "terminal_hash", "merkle_root")}
        if expected != result:
            raise ValueError(f"bundle does not match its checkpoint {expected}")
    else:
        # A session directory (an export bundle carries no receipts).
        check_receipts(directory, commands)
    return result


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        print(json.dumps(verify(sys.argv[1])))
    except (ValueError, KeyError, OSError, TypeError, AttributeError, RecursionError) as error:
        # Anything the files hold is an answer about the files, never a crash of the verifier.
        print(f"not intact: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
