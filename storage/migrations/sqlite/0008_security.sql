-- Users of the Kafka door and where each broker listens.
--
-- A user's SCRAM credential per mechanism (RFC 5802): the salt, the PBKDF2
-- iteration count and the two keys derived from the salted password. The
-- password itself is never stored; PLAIN is checked by deriving the keys
-- again. Every broker on the database sees the same users.
CREATE TABLE scram_credentials (
    username   TEXT    NOT NULL,
    mechanism  TEXT    NOT NULL,
    salt       BLOB    NOT NULL,
    iterations INTEGER NOT NULL,
    stored_key BLOB    NOT NULL,
    server_key BLOB    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (username, mechanism)
) WITHOUT ROWID;

-- Each broker's listeners by name (PLAINTEXT, SASL_SSL, ...), with the
-- address clients connecting through that listener are given.
CREATE TABLE broker_listeners (
    broker_id INTEGER NOT NULL REFERENCES brokers (id) ON DELETE CASCADE,
    listener  TEXT    NOT NULL,
    host      TEXT    NOT NULL,
    port      INTEGER NOT NULL,
    PRIMARY KEY (broker_id, listener)
) WITHOUT ROWID;
