-- The key/value store (KV, and the `once` markers of transactions).
--
-- `kv_key` sorts bytewise (COLLATE "C") so that a prefix scan is a range
-- scan in the order clients page through. `version` comes from a sequence,
-- so a version is never issued twice, even across deletes, rollbacks and
-- brokers. `expires_at` is in ms since the epoch; NULL means forever. An
-- expired row is invisible to every read and write before the sweep
-- removes it.

CREATE SEQUENCE kv_version_seq;

CREATE TABLE kv (
    ns         TEXT COLLATE "C" NOT NULL,
    kv_key     TEXT COLLATE "C" NOT NULL,
    value      TEXT   NOT NULL,
    version    BIGINT NOT NULL,
    expires_at BIGINT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (ns, kv_key)
);

CREATE INDEX kv_expiry ON kv (expires_at) WHERE expires_at IS NOT NULL;
