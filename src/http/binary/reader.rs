//! A bounded little-endian reader over a binary body: a read past the end
//! is an error naming the field, never a panic.

use super::BinaryError;

/// Reads fields off `bytes`, front to back.
#[derive(Debug)]
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader of `bytes`.
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], BinaryError> {
        if n > self.bytes.len() {
            return Err(BinaryError::Truncated(what));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], BinaryError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    /// A byte.
    pub(super) fn u8(&mut self, what: &'static str) -> Result<u8, BinaryError> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A little-endian u16.
    pub(super) fn u16(&mut self, what: &'static str) -> Result<u16, BinaryError> {
        self.array(what).map(u16::from_le_bytes)
    }

    /// A little-endian u32, as a length or count.
    pub(super) fn u32(&mut self, what: &'static str) -> Result<usize, BinaryError> {
        let n = u32::from_le_bytes(self.array(what)?);
        usize::try_from(n).map_err(|_| BinaryError::Invalid(format!("{what} {n} is too large")))
    }

    /// A `str16`: a u16 length and that many bytes of UTF-8.
    pub(super) fn str16(&mut self, what: &'static str) -> Result<&'a str, BinaryError> {
        let len = usize::from(self.u16(what)?);
        std::str::from_utf8(self.take(len, what)?)
            .map_err(|_| BinaryError::Invalid(format!("{what} is not UTF-8")))
    }

    /// How many bytes are left.
    pub(super) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    /// What is left.
    pub(super) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }

    /// Refuses bytes left after the last field.
    pub(super) fn finish(&self, after: &'static str) -> Result<(), BinaryError> {
        match self.bytes.len() {
            0 => Ok(()),
            n => Err(BinaryError::Trailing(n, after)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_refuses_short_input() {
        let mut r = Reader::new(&[1, 2, 0, 3, 0, 0, 0, 2, 0, b'h', b'i', 9]);
        assert_eq!(r.u8("a").ok(), Some(1));
        assert_eq!(r.u16("b").ok(), Some(2));
        assert_eq!(r.u32("c").ok(), Some(3));
        assert_eq!(r.str16("d").ok(), Some("hi"));
        assert!(matches!(r.finish("e"), Err(BinaryError::Trailing(1, "e"))));
        assert!(matches!(r.u16("f"), Err(BinaryError::Truncated("f"))));
        let mut r = Reader::new(&[5, 0, b'a']);
        assert!(matches!(r.str16("g"), Err(BinaryError::Truncated("g"))));
        let mut r = Reader::new(&[1, 0, 0xff]);
        assert!(matches!(r.str16("h"), Err(BinaryError::Invalid(_))));
    }
}
