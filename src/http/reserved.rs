//! The broker's internal topics (`__consumer_offsets`; every name starting
//! with `__` is reserved for them) are written by the broker alone: the
//! HTTP door reads them but refuses to push to, create or configure one, as
//! the Kafka door refuses to produce to or create one. Acks and deletes are
//! refused by the engine, for both doors.

use storage::offsets_log::is_reserved;
use storage::StorageError;

use super::error::ApiError;

/// Refuses a request naming a reserved topic, before anything is written.
pub(super) fn refuse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), ApiError> {
    match names.into_iter().find(|name| is_reserved(name)) {
        Some(name) => Err(StorageError::Reserved(name.to_owned()).into()),
        None => Ok(()),
    }
}
