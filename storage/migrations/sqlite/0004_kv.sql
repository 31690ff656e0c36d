-- The key/value store (KV, and the `once` markers of transactions).
--
-- Keys compare bytewise (SQLite's BINARY collation), so a prefix scan is a
-- range scan. Versions come from the one-row counter `kv_version`, moved
-- inside the writing transaction (SQLite has one writer), so a version is
-- never issued twice, even across deletes. `expires_at` is in ms since the
-- epoch; NULL means forever. An expired row is invisible to every read and
-- write before the sweep removes it.

CREATE TABLE kv_version (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);

INSERT INTO kv_version (id, last) VALUES (1, 0);

CREATE TABLE kv (
    ns         TEXT    NOT NULL,
    kv_key     TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    expires_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (ns, kv_key)
) WITHOUT ROWID;

CREATE INDEX kv_expiry ON kv (expires_at) WHERE expires_at IS NOT NULL;
