-- Configs of Kafka resources other than topics, set with AlterConfigs or
-- IncrementalAlterConfigs and shared by every broker on the database:
--   resource_type  Kafka's ConfigResource type: 4 a broker, 32 a group
--   resource_name  the broker's node id, '' for the cluster-wide broker
--                  default; the group id
--   name, value    the config as the client set it (the resource name and
--                  value are bytes: PostgreSQL TEXT cannot hold a NUL)
-- (Topic configs live with their queue's options.)
CREATE TABLE kafka_resource_configs (
    resource_type SMALLINT NOT NULL,
    resource_name BYTEA    NOT NULL,
    name          TEXT     NOT NULL,
    value         BYTEA    NOT NULL,
    updated_at    BIGINT   NOT NULL,
    PRIMARY KEY (resource_type, resource_name, name)
);
