//! Kafka's base-128 varints: the one decoder of unsigned varints, used by
//! the request guard (compact lengths, counts, tags), with zigzag on top for
//! the signed varints of records.

/// The most bytes the guard reads for an unsigned varint: Kafka's compact
/// lengths, counts and tags are 32-bit values, which take at most 5 bytes.
pub(crate) const MAX_LEN_32: usize = 5;

/// The most bytes a 64-bit varint takes (a record's varlongs).
pub(crate) const MAX_LEN_64: usize = 10;

/// Why a varint could not be read; callers wrap the text in their own error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    /// The buffer ended before the last byte (one without the high bit).
    #[error("truncated varint")]
    Truncated,
    /// More bytes than allowed still had the high bit set.
    #[error("varint too long")]
    TooLong,
}

/// Writes `v` as an unsigned varint (compact lengths, counts, tags).
pub(crate) fn put_unsigned(buf: &mut impl bytes::BufMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Reads an unsigned varint of at most `max_len` bytes (never more than
/// [`MAX_LEN_64`]) from the front of `buf`: its value and how many bytes it
/// took. Bits of a tenth byte beyond the 64th are dropped, as they always
/// were for record varlongs.
pub(crate) fn unsigned(buf: &[u8], max_len: usize) -> Result<(u64, usize), Error> {
    let mut v = 0u64;
    // The clamp keeps the shift below 64 whatever a caller passes.
    for i in 0..max_len.min(MAX_LEN_64) {
        let b = *buf.get(i).ok_or(Error::Truncated)?;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err(Error::TooLong)
}

/// Reads a zigzag varint of up to 64 bits from the front of `buf`: its
/// value and how many bytes it took.
pub(crate) fn zigzag(buf: &[u8]) -> Result<(i64, usize), Error> {
    let (raw, len) = unsigned(buf, MAX_LEN_64)?;
    Ok(((raw >> 1) as i64 ^ -((raw & 1) as i64), len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_byte_values_take_one_byte_and_ignore_what_follows() {
        assert_eq!(unsigned(&[0x00], MAX_LEN_32), Ok((0, 1)));
        assert_eq!(unsigned(&[0x7f, 0xff], MAX_LEN_32), Ok((127, 1)));
        assert_eq!(unsigned(&[0x80, 0x01], MAX_LEN_32), Ok((128, 2)));
    }

    #[test]
    fn what_is_written_reads_back() {
        for v in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            put_unsigned(&mut buf, v);
            assert_eq!(unsigned(&buf, MAX_LEN_64), Ok((v, buf.len())), "{v}");
        }
    }

    #[test]
    fn the_longest_varints_are_read_whole() {
        let max64 = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(unsigned(&max64, MAX_LEN_64), Ok((u64::MAX, 10)));
        let max32 = [0xff, 0xff, 0xff, 0xff, 0x0f];
        assert_eq!(unsigned(&max32, MAX_LEN_32), Ok((u64::from(u32::MAX), 5)));
    }

    #[test]
    fn over_long_varints_are_refused() {
        assert_eq!(unsigned(&[0x80; 11], MAX_LEN_64), Err(Error::TooLong));
        assert_eq!(
            unsigned(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], MAX_LEN_32),
            Err(Error::TooLong)
        );
        // A limit past ten bytes still stops at ten.
        assert_eq!(unsigned(&[0x80; 11], 20), Err(Error::TooLong));
    }

    #[test]
    fn truncated_varints_are_refused() {
        assert_eq!(unsigned(&[], MAX_LEN_32), Err(Error::Truncated));
        assert_eq!(unsigned(&[0x80], MAX_LEN_32), Err(Error::Truncated));
        assert_eq!(unsigned(&[0xff; 9], MAX_LEN_64), Err(Error::Truncated));
    }

    #[test]
    fn zigzag_alternates_signs_up_to_the_extremes() {
        assert_eq!(zigzag(&[0x00]), Ok((0, 1)));
        assert_eq!(zigzag(&[0x01]), Ok((-1, 1)));
        assert_eq!(zigzag(&[0x02]), Ok((1, 1)));
        assert_eq!(zigzag(&[0x03]), Ok((-2, 1)));
        let max = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(zigzag(&max), Ok((i64::MAX, 10)));
        let min = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(zigzag(&min), Ok((i64::MIN, 10)));
    }

    #[test]
    fn errors_keep_their_texts() {
        assert_eq!(Error::Truncated.to_string(), "truncated varint");
        assert_eq!(Error::TooLong.to_string(), "varint too long");
    }
}
