//! The primitive types of the classic (non-flexible) protocol encoding,
//! read from a request and written to an answer: what the legacy codecs
//! are built from.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;

use crate::conn::ConnError;

/// Reads a request body field by field; every shortfall is a
/// [`ConnError::Malformed`], never a panic.
pub(super) struct Reader {
    buf: Bytes,
}

fn short(what: &str) -> ConnError {
    ConnError::Malformed(format!("truncated {what}"))
}

impl Reader {
    /// A reader of `buf`.
    pub(super) fn new(buf: Bytes) -> Self {
        Self { buf }
    }

    pub(super) fn i8(&mut self) -> Result<i8, ConnError> {
        (self.buf.remaining() >= 1)
            .then(|| self.buf.get_i8())
            .ok_or_else(|| short("int8"))
    }

    pub(super) fn i16(&mut self) -> Result<i16, ConnError> {
        (self.buf.remaining() >= 2)
            .then(|| self.buf.get_i16())
            .ok_or_else(|| short("int16"))
    }

    pub(super) fn i32(&mut self) -> Result<i32, ConnError> {
        (self.buf.remaining() >= 4)
            .then(|| self.buf.get_i32())
            .ok_or_else(|| short("int32"))
    }

    pub(super) fn i64(&mut self) -> Result<i64, ConnError> {
        (self.buf.remaining() >= 8)
            .then(|| self.buf.get_i64())
            .ok_or_else(|| short("int64"))
    }

    fn take(&mut self, len: usize, what: &str) -> Result<Bytes, ConnError> {
        if self.buf.remaining() < len {
            return Err(short(what));
        }
        Ok(self.buf.split_to(len))
    }

    /// A nullable string (int16 length, -1 for null), UTF-8 checked.
    pub(super) fn nullable_string(&mut self) -> Result<Option<StrBytes>, ConnError> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        let raw = self.take(len as usize, "string")?;
        StrBytes::from_utf8(raw)
            .map(Some)
            .map_err(|_| ConnError::Malformed("a string is not UTF-8".into()))
    }

    /// A string that may not be null.
    pub(super) fn string(&mut self) -> Result<StrBytes, ConnError> {
        self.nullable_string()?
            .ok_or_else(|| ConnError::Malformed("null where a string is required".into()))
    }

    /// A topic name.
    pub(super) fn topic(&mut self) -> Result<TopicName, ConnError> {
        self.string().map(TopicName)
    }

    /// Nullable bytes (int32 length, -1 for null), sharing the frame's memory.
    pub(super) fn nullable_bytes(&mut self) -> Result<Option<Bytes>, ConnError> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(None);
        }
        self.take(len as usize, "bytes").map(Some)
    }

    /// An array (int32 count, -1 for null, read as empty) of items each at
    /// least `min_item` bytes long: a count the remaining bytes cannot hold
    /// is refused before anything is allocated for it.
    pub(super) fn array<T>(
        &mut self,
        min_item: usize,
        item: impl FnMut(&mut Self) -> Result<T, ConnError>,
    ) -> Result<Vec<T>, ConnError> {
        let count = self.i32()?;
        self.counted(count, min_item, item)
    }

    /// The items of an array whose count was read already (negative: none).
    pub(super) fn counted<T>(
        &mut self,
        count: i32,
        min_item: usize,
        mut item: impl FnMut(&mut Self) -> Result<T, ConnError>,
    ) -> Result<Vec<T>, ConnError> {
        let Ok(count) = usize::try_from(count) else {
            return Ok(Vec::new());
        };
        if count.saturating_mul(min_item.max(1)) > self.buf.remaining() {
            return Err(ConnError::Malformed(format!(
                "an array of {count} items is longer than the request"
            )));
        }
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            out.push(item(self)?);
        }
        Ok(out)
    }
}

/// Writes a nullable string (int16 length, -1 for null).
pub(super) fn put_nullable_string(out: &mut BytesMut, s: Option<&str>) {
    match s {
        None => out.put_i16(-1),
        Some(s) => {
            out.put_i16(s.len() as i16);
            out.put_slice(s.as_bytes());
        }
    }
}

/// Writes a string.
pub(super) fn put_string(out: &mut BytesMut, s: &str) {
    put_nullable_string(out, Some(s));
}

/// Writes bytes with an int32 length.
pub(super) fn put_bytes(out: &mut BytesMut, b: &[u8]) {
    out.put_i32(b.len() as i32);
    out.put_slice(b);
}

/// Writes an array: its count, then each item.
pub(super) fn put_array<T>(
    out: &mut BytesMut,
    items: &[T],
    mut item: impl FnMut(&mut BytesMut, &T),
) {
    out.put_i32(items.len() as i32);
    for i in items {
        item(out, i);
    }
}
