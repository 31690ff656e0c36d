-- The brokers sharing this database, as the Kafka facade advertises them,
-- and the cluster's id. A broker is live while its heartbeat is recent.

CREATE TABLE brokers (
    id           SERIAL PRIMARY KEY,
    host         TEXT    NOT NULL,
    port         INTEGER NOT NULL,
    heartbeat_at BIGINT  NOT NULL,
    UNIQUE (host, port)
);

CREATE TABLE cluster (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    cluster_id TEXT NOT NULL
);
