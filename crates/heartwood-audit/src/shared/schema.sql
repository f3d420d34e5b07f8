-- Heartwood's session store in PostgreSQL. The journal's bytes are kept exactly as the file
-- store writes them (one event line and one audit line per row, without the newline), so a
-- session materialized from here is byte for byte the session a file store would hold.
CREATE TABLE IF NOT EXISTS heartwood_sessions (
    id            text PRIMARY KEY,
    meta          bytea NOT NULL,
    last_activity timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS heartwood_journal (
    session    text NOT NULL REFERENCES heartwood_sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    event_line bytea NOT NULL,
    audit_line bytea NOT NULL,
    token      bigint NOT NULL,
    PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS heartwood_receipts (
    session text NOT NULL REFERENCES heartwood_sessions (id) ON DELETE CASCADE,
    offset_before bigint NOT NULL,
    line    bytea NOT NULL,
    PRIMARY KEY (session, offset_before)
);
CREATE TABLE IF NOT EXISTS heartwood_backend (
    session       text NOT NULL REFERENCES heartwood_sessions (id) ON DELETE CASCADE,
    file          text NOT NULL,
    offset_before bigint NOT NULL,
    bytes         bytea NOT NULL,
    PRIMARY KEY (session, file, offset_before)
);
CREATE TABLE IF NOT EXISTS heartwood_leases (
    session    text PRIMARY KEY REFERENCES heartwood_sessions (id) ON DELETE CASCADE,
    holder     text NOT NULL,
    token      bigint NOT NULL,
    expires_at timestamptz NOT NULL,
    released   boolean NOT NULL DEFAULT false
);
CREATE TABLE IF NOT EXISTS heartwood_commands (
    id        bigserial PRIMARY KEY,
    session   text NOT NULL,
    holder    text NOT NULL,
    command   bytea NOT NULL,
    taken     boolean NOT NULL DEFAULT false,
    reply     bytea,
    posted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS heartwood_commands_waiting ON heartwood_commands (holder) WHERE NOT taken;
-- Session ids a replica handed out before their first command: any replica serves them.
CREATE TABLE IF NOT EXISTS heartwood_issued (
    id        text PRIMARY KEY,
    issued_at timestamptz NOT NULL DEFAULT now()
);
