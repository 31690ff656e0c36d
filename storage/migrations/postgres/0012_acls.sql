-- Kafka ACLs, shared by every broker on the database (both doors enforce
-- them). Kinds are Kafka's numeric codes (resource type, pattern type,
-- operation, permission), so a binding reads back exactly as a client
-- created it; the whole binding is the key, as Kafka keeps a set.
CREATE TABLE acls (
    resource_type SMALLINT NOT NULL,
    resource_name TEXT     NOT NULL,
    pattern_type  SMALLINT NOT NULL,
    principal     TEXT     NOT NULL,
    host          TEXT     NOT NULL,
    operation     SMALLINT NOT NULL,
    permission    SMALLINT NOT NULL,
    PRIMARY KEY (resource_type, resource_name, pattern_type, principal, host,
                 operation, permission)
);

-- Bumped in the transaction of every change: brokers cache the ACLs and
-- read only this counter to learn whether to read them again.
CREATE TABLE acl_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT  NOT NULL
);
INSERT INTO acl_version (id, version) VALUES (1, 0);
