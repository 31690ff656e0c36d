-- Fetch and Produce v13+ name topics by id: found through this index rather
-- than by reading the whole catalog.
CREATE UNIQUE INDEX queues_by_topic_id ON queues (topic_id);
