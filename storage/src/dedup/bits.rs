//! The memory behind a dedup filter. A large filter gets an anonymous
//! mapping of its own, which goes back to the system the moment it is
//! dropped. From glibc's heaps instead, the megabyte filters that merges
//! create and retire all the time left the heaps fragmented: once the
//! first large block is freed, glibc raises its mapping threshold and
//! serves later ones from its arenas (the 16-partition dedup bench peaked
//! at 109 MiB that way, 97 MiB with the threshold pinned).

use std::ops::{Deref, DerefMut};

use memmap2::MmapMut;

/// From this size on, bits get a mapping of their own: glibc's initial
/// mapping threshold.
const MAPPED_FROM: usize = 128 * 1024;

/// Zeroed or copied bytes, on the heap or in a mapping of their own.
pub(crate) enum Bits {
    /// Below [`MAPPED_FROM`], or when no mapping could be had.
    Heap(Vec<u8>),
    /// An anonymous mapping of exactly the bytes' length.
    Mapped(MmapMut),
}

impl Bits {
    /// `len` zero bytes.
    pub(crate) fn zeroed(len: usize) -> Self {
        match Self::mapping(len) {
            Some(map) => Self::Mapped(map),
            None => Self::Heap(vec![0; len]),
        }
    }

    /// Takes `bytes`, moved into a mapping if they are large.
    pub(crate) fn from_vec(bytes: Vec<u8>) -> Self {
        match Self::mapping(bytes.len()) {
            Some(mut map) => {
                map.copy_from_slice(&bytes);
                Self::Mapped(map)
            }
            None => Self::Heap(bytes),
        }
    }

    /// A fresh anonymous mapping (zeroed by the system) for a large size;
    /// `None` for a small one, or if the system refuses (the heap serves).
    fn mapping(len: usize) -> Option<MmapMut> {
        (len >= MAPPED_FROM)
            .then(|| MmapMut::map_anon(len).ok())
            .flatten()
    }
}

impl Deref for Bits {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Heap(v) => v,
            Self::Mapped(m) => m,
        }
    }
}

impl DerefMut for Bits {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Self::Heap(v) => v,
            Self::Mapped(m) => m,
        }
    }
}

impl PartialEq for Bits {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Bits {}

impl std::fmt::Debug for Bits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Heap(v) => write!(f, "Bits::Heap({} bytes)", v.len()),
            Self::Mapped(m) => write!(f, "Bits::Mapped({} bytes)", m.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_bits_are_mapped_small_ones_are_not_and_both_read_back() {
        let small = Bits::from_vec(vec![7; 64]);
        assert!(matches!(small, Bits::Heap(_)));
        let mut large = Bits::zeroed(MAPPED_FROM);
        assert!(matches!(large, Bits::Mapped(_)));
        assert!(large.iter().all(|&b| b == 0));
        large[MAPPED_FROM - 1] = 9;
        assert_eq!(large[MAPPED_FROM - 1], 9);
        assert_ne!(large, Bits::zeroed(MAPPED_FROM));
        let moved = Bits::from_vec(vec![3; MAPPED_FROM + 32]);
        assert!(matches!(moved, Bits::Mapped(_)));
        assert!(moved.iter().all(|&b| b == 3));
    }
}
