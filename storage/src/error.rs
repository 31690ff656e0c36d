//! The errors of the storage engine.

/// Everything the engine can refuse or fail with. Messages are written for the
/// person who sent the request: they never carry SQL text.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The request is malformed in a way the caller can fix (bad name, id too long, ...).
    #[error("{0}")]
    InvalidInput(String),
    /// A name is longer than the engine accepts.
    #[error("{what} is longer than {limit} bytes")]
    NameTooLong {
        /// Which name ("queue name", "partition name").
        what: &'static str,
        /// The limit in bytes.
        limit: usize,
    },
    /// A KV op is malformed (answered as `kv_bad_request` with `reason`).
    #[error("{detail}")]
    KvBadRequest {
        /// A stable identifier of what is wrong (`kv_bad_key`, ...).
        reason: &'static str,
        /// What is wrong, for a person.
        detail: String,
    },
    /// A KV value is larger than the engine stores.
    #[error("the value is {bytes} bytes of JSON; at most {limit} are stored")]
    KvValueTooLarge {
        /// The value's size as compact JSON.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The named queue does not exist.
    #[error("queue {0:?} does not exist")]
    QueueNotFound(String),
    /// The partition does not exist (any more).
    #[error("partition {0} does not exist")]
    PartitionNotFound(crate::model::PartitionId),
    /// An offset outside the partition's stored range.
    #[error("offset {offset} is outside the partition's range {log_start}..={next_offset}")]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: i64,
        /// The partition's first stored offset.
        log_start: i64,
        /// The offset the next message gets.
        next_offset: i64,
    },
    /// A Kafka producer's batch or InitProducerId was refused.
    #[error("{0}")]
    Producer(#[from] crate::producers::ProducerError),
    /// A Kafka transaction request was refused.
    #[error("{0}")]
    Transaction(#[from] crate::transactions::TxnError),
    /// Stored data could not be decoded: a bug or a damaged database.
    #[error("stored data is damaged: {0}")]
    Corrupt(String),
    /// A payload of an encrypted queue could not be sealed or opened.
    #[error("{0}")]
    Sealed(#[from] crate::sealing::SealError),
    /// The partition's topic is mirrored from a source cluster and not yet
    /// fenced: only the mirror writes to it.
    #[error("partition {0} belongs to a topic mirrored from a source cluster; fence the mirror before producing to it")]
    Mirrored(crate::model::PartitionId),
    /// The topic's name is reserved for the broker's internal topics
    /// ([`crate::offsets_log::is_reserved`]): clients read such a topic
    /// but never write, create, configure or delete it, nor acknowledge
    /// its messages.
    #[error("topic {0:?} is reserved for the broker's internal topics (names starting with \"__\"): clients may read it but not write, configure, delete or acknowledge it")]
    Reserved(String),
    /// The append could not be committed; the request can be retried.
    #[error("the write could not be committed; retry")]
    CommitFailed,
    /// The broker is shutting down and no longer takes writes.
    #[error("the broker is shutting down")]
    ShuttingDown,
    /// The database failed; the cause is logged, not shown to clients.
    #[error("database error: {0}")]
    Database(DatabaseError),
    /// Applying the schema migrations failed.
    #[error("database migration failed: {0}")]
    Migrate(DatabaseError),
}

/// What the database driver reported. Opaque, so the driver is not part of
/// the engine's API: it can be shown and logged, and its source followed.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DatabaseError(Box<dyn std::error::Error + Send + Sync>);

impl From<sqlx::Error> for StorageError {
    fn from(e: sqlx::Error) -> Self {
        Self::Database(DatabaseError(Box::new(e)))
    }
}

impl From<sqlx::migrate::MigrateError> for StorageError {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        Self::Migrate(DatabaseError(Box::new(e)))
    }
}

/// Short form for results of the storage engine.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
