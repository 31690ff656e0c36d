//! At-rest encryption of the payloads of queues with `encryptionEnabled`.
//!
//! What is sealed is every stored blob that holds a message: a segment's
//! records and a dead letter's record. Each is sealed on its own with
//! AES-256-GCM under the broker's key and a fresh random nonce, so any
//! blob can be opened without its neighbours. A sealed blob is
//! self-describing:
//!
//! ```text
//! MAGIC (1 byte) | key id (4 bytes) | nonce (12 bytes) | ciphertext | tag (16 bytes)
//! ```
//!
//! A blob in clear starts with a record's flags byte, which is always below
//! 0x40 (`record.rs`), so [`MAGIC`] never starts one: readers need no
//! column to tell sealed blobs from clear ones, and a queue that turns
//! encryption on or off keeps its older blobs readable. The key id (the
//! first bytes of the key's SHA-256) lets a broker given the wrong key say
//! so, rather than call every payload damaged.
//!
//! Only payloads are sealed: offsets, timestamps, counts and the dedup
//! sidecar's hashes stay in clear, as the engine searches them.
//!
//! Keys rotate through a [`Keyring`]: its current key seals, and retired
//! keys still open what they sealed until [`crate::Engine::reseal`] has
//! sealed all of it again under the current key.

use std::path::Path;

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};

/// The first byte of every sealed blob.
const MAGIC: u8 = 0xE5;

/// The bytes of the key id.
const KEY_ID_LEN: usize = 4;

/// The bytes before the ciphertext: they tell one sealing of a blob from
/// any other, as the nonce is drawn afresh each time.
pub(crate) const HEADER_LEN: usize = 1 + KEY_ID_LEN + NONCE_LEN;

/// The bytes of the GCM tag after the ciphertext.
const TAG_LEN: usize = 16;

/// Why a payload could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The queue's payloads are (to be) encrypted and the broker has no key.
    #[error(
        "the queue's payloads are encrypted at rest and this broker has no encryption key \
         (start it with --encryption-key-file)"
    )]
    NoKey,
    /// The payload was sealed under a key the broker does not have.
    #[error(
        "the payload was encrypted with another key (key id {sealed_with}) than this broker's \
         (key ids {ours})"
    )]
    WrongKey {
        /// The id of the key the payload was sealed with.
        sealed_with: String,
        /// The ids of the broker's keys, current first.
        ours: String,
    },
    /// The payload failed authentication: it was damaged or tampered with.
    #[error("an encrypted payload failed authentication: it is damaged")]
    Damaged,
    /// The operating system's random source failed.
    #[error("no randomness for a nonce")]
    Random,
}

/// Why a key file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The file could not be read.
    #[error("cannot read the encryption key file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file holds something other than a key.
    #[error(
        "the encryption key file {0} must hold 32 bytes: 64 hexadecimal digits \
         (e.g. from `openssl rand -hex 32`) or the 32 raw bytes"
    )]
    Malformed(String),
}

/// The broker's 256-bit payload key.
#[derive(Clone)]
pub struct PayloadKey([u8; 32]);

impl std::fmt::Debug for PayloadKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key itself, not even in a debug log.
        write!(f, "PayloadKey({})", hex(&key_id(&self.0)))
    }
}

impl PayloadKey {
    /// The key in `bytes`.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Reads a key file: 64 hexadecimal digits (surrounding whitespace
    /// ignored), or exactly 32 raw bytes.
    pub fn from_file(path: &Path) -> Result<Self, KeyFileError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| KeyFileError::Read {
            path: shown.clone(),
            source,
        })?;
        let text = std::str::from_utf8(&bytes).map(str::trim).unwrap_or("");
        let key = if text.len() == 64 {
            let mut key = [0u8; 32];
            for (i, pair) in text.as_bytes().chunks(2).enumerate() {
                let digits = std::str::from_utf8(pair).unwrap_or("");
                key[i] = u8::from_str_radix(digits, 16)
                    .map_err(|_| KeyFileError::Malformed(shown.clone()))?;
            }
            key
        } else {
            <[u8; 32]>::try_from(bytes.as_slice())
                .map_err(|_| KeyFileError::Malformed(shown.clone()))?
        };
        Ok(Self(key))
    }

    /// The key's public id, as payloads sealed under it name it.
    pub fn id(&self) -> String {
        hex(&key_id(&self.0))
    }
}

/// The keys a broker seals and opens payloads with.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    current: Option<PayloadKey>,
    retired: Vec<PayloadKey>,
}

impl Keyring {
    /// `current` seals and opens; each of `retired` only opens, while the
    /// payloads it sealed are sealed again under `current`.
    pub fn new(current: Option<PayloadKey>, retired: Vec<PayloadKey>) -> Self {
        Self { current, retired }
    }

    /// The key that seals.
    pub fn current(&self) -> Option<&PayloadKey> {
        self.current.as_ref()
    }

    /// The keys that only open.
    pub fn retired(&self) -> &[PayloadKey] {
        &self.retired
    }
}

/// One key, ready to seal and open.
struct Key {
    cipher: LessSafeKey,
    id: [u8; KEY_ID_LEN],
}

impl Key {
    fn new(key: &PayloadKey) -> Option<Self> {
        let cipher = UnboundKey::new(&AES_256_GCM, &key.0).ok()?;
        Some(Self {
            cipher: LessSafeKey::new(cipher),
            id: key_id(&key.0),
        })
    }
}

/// Seals payloads with the broker's current key, if it has one, and opens
/// them with whichever of its keys sealed them.
pub(crate) struct Sealer {
    current: Option<Key>,
    retired: Vec<Key>,
    random: SystemRandom,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("key_ids", &self.ids())
            .finish()
    }
}

impl Sealer {
    /// A sealer with the keys of `keys` (none: it opens nothing sealed).
    pub(crate) fn new(keys: &Keyring) -> Self {
        Self {
            current: keys.current.as_ref().and_then(Key::new),
            retired: keys.retired.iter().filter_map(Key::new).collect(),
            random: SystemRandom::new(),
        }
    }

    /// Whether the broker has a key to seal with.
    pub(crate) fn has_key(&self) -> bool {
        self.current.is_some()
    }

    /// Whether `blob` is sealed under another key than the current one, so
    /// that [`crate::Engine::reseal`] should seal it again. `head` is at
    /// least the blob's first [`HEADER_LEN`] bytes.
    pub(crate) fn is_stale(&self, head: &[u8]) -> bool {
        is_sealed(head)
            && self
                .current
                .as_ref()
                .is_some_and(|k| head.get(1..1 + KEY_ID_LEN) != Some(&k.id[..]))
    }

    /// `plain` sealed.
    pub(crate) fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, SealError> {
        let key = self.current.as_ref().ok_or(SealError::NoKey)?;
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| SealError::Random)?;
        let mut out = Vec::with_capacity(HEADER_LEN + plain.len() + TAG_LEN);
        out.push(MAGIC);
        out.extend_from_slice(&key.id);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let (header, body) = out.split_at_mut(HEADER_LEN);
        let tag = key
            .cipher
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&header[..1 + KEY_ID_LEN]),
                body,
            )
            .map_err(|_| SealError::Damaged)?;
        out.extend_from_slice(tag.as_ref());
        Ok(out)
    }

    /// `blob` in clear: opened if sealed, as it is otherwise.
    pub(crate) fn open(&self, blob: Vec<u8>) -> Result<Vec<u8>, SealError> {
        if !is_sealed(&blob) {
            return Ok(blob);
        }
        let mut blob = blob;
        let len = self.open_in_place(&mut blob)?.len();
        blob.drain(..HEADER_LEN);
        blob.truncate(len);
        Ok(blob)
    }

    /// Decrypts the body of the sealed `blob` in place; returns the plaintext.
    fn open_in_place<'b>(&self, blob: &'b mut [u8]) -> Result<&'b [u8], SealError> {
        if self.current.is_none() && self.retired.is_empty() {
            return Err(SealError::NoKey);
        }
        if blob.len() < HEADER_LEN + TAG_LEN {
            return Err(SealError::Damaged);
        }
        let (header, body) = blob.split_at_mut(HEADER_LEN);
        let sealed_with = &header[1..1 + KEY_ID_LEN];
        let key = self
            .current
            .iter()
            .chain(&self.retired)
            .find(|k| k.id == sealed_with)
            .ok_or_else(|| SealError::WrongKey {
                sealed_with: hex(sealed_with),
                ours: self.ids().join(", "),
            })?;
        let nonce = Nonce::try_assume_unique_for_key(&header[1 + KEY_ID_LEN..])
            .map_err(|_| SealError::Damaged)?;
        let plain = key
            .cipher
            .open_in_place(nonce, Aad::from(&header[..1 + KEY_ID_LEN]), body)
            .map_err(|_| SealError::Damaged)?;
        Ok(plain)
    }

    /// The ids of the keys, current first.
    fn ids(&self) -> Vec<String> {
        self.current
            .iter()
            .chain(&self.retired)
            .map(|k| hex(&k.id))
            .collect()
    }
}

/// `blob` sealed by `sealer`, or as it is without one.
pub(crate) fn seal_with(sealer: Option<&Sealer>, blob: Vec<u8>) -> Result<Vec<u8>, SealError> {
    match sealer {
        Some(sealer) => sealer.seal(&blob),
        None => Ok(blob),
    }
}

/// Whether `blob` is sealed (see the module's notes on [`MAGIC`]).
pub(crate) fn is_sealed(blob: &[u8]) -> bool {
    blob.first() == Some(&MAGIC)
}

/// The id of a key: the first bytes of its SHA-256.
fn key_id(key: &[u8; 32]) -> [u8; KEY_ID_LEN] {
    let digest = ring::digest::digest(&ring::digest::SHA256, key);
    let mut id = [0u8; KEY_ID_LEN];
    id.copy_from_slice(&digest.as_ref()[..KEY_ID_LEN]);
    id
}

/// Lower-case hexadecimal.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer(byte: u8) -> Sealer {
        Sealer::new(&Keyring::new(Some(PayloadKey::new([byte; 32])), Vec::new()))
    }

    #[test]
    fn sealed_blobs_open_to_what_was_sealed_and_hide_it() {
        let s = sealer(7);
        let plain = b"\x01the payload, in clear".to_vec();
        let sealed = s.seal(&plain).unwrap();
        assert!(is_sealed(&sealed));
        assert!(!sealed.windows(9).any(|w| w == b"payload, "));
        assert_eq!(s.open(sealed.clone()).unwrap(), plain);
        // A fresh nonce each time: the same payload never seals the same.
        assert_ne!(s.seal(&plain).unwrap(), sealed);
    }

    #[test]
    fn clear_blobs_pass_through_even_without_a_key() {
        let none = Sealer::new(&Keyring::default());
        let plain = vec![0x1f, 1, 2, 3];
        assert_eq!(none.open(plain.clone()).unwrap(), plain);
        assert_eq!(none.seal(&plain), Err(SealError::NoKey));
    }

    #[test]
    fn a_missing_wrong_or_damaged_key_is_an_error_not_ciphertext() {
        let sealed = sealer(1).seal(b"\x02secret").unwrap();
        assert_eq!(
            Sealer::new(&Keyring::default()).open(sealed.clone()),
            Err(SealError::NoKey)
        );
        assert!(matches!(
            sealer(2).open(sealed.clone()),
            Err(SealError::WrongKey { .. })
        ));
        for i in [HEADER_LEN, sealed.len() - 1] {
            let mut damaged = sealed.clone();
            damaged[i] ^= 1;
            assert_eq!(sealer(1).open(damaged), Err(SealError::Damaged));
        }
        assert_eq!(
            sealer(1).open(sealed[..10].to_vec()),
            Err(SealError::Damaged)
        );
    }

    #[test]
    fn retired_keys_open_what_they_sealed_and_only_the_current_key_seals() {
        let old = sealer(1).seal(b"\x02sealed before the rotation").unwrap();
        let rotated = Sealer::new(&Keyring::new(
            Some(PayloadKey::new([2; 32])),
            vec![PayloadKey::new([1; 32])],
        ));
        assert_eq!(
            rotated.open(old.clone()).unwrap(),
            b"\x02sealed before the rotation"
        );
        assert!(rotated.is_stale(&old[..HEADER_LEN]));
        let new = rotated.seal(b"\x02after").unwrap();
        assert!(!rotated.is_stale(&new[..HEADER_LEN]));
        assert!(!rotated.is_stale(&[0x01, 2, 3]));
        // The old key alone no longer opens what the rotated broker seals.
        assert!(matches!(
            sealer(1).open(new),
            Err(SealError::WrongKey { .. })
        ));
    }

    #[test]
    fn no_record_in_clear_looks_sealed() {
        use crate::record::{Content, KafkaRecord, Record};
        let kafka = |key: bool, value: bool| {
            Content::Kafka(KafkaRecord {
                key: key.then(|| bytes::Bytes::from_static(b"\xE5")),
                value: value.then(|| bytes::Bytes::from_static(b"\xE5")),
                headers: Vec::new(),
                timestamp_ms: 1,
                txn: None,
            })
        };
        let contents = [
            Content::Json("{}".into()),
            kafka(true, true),
            kafka(false, false),
        ];
        for content in contents {
            let every_field = (Some("t"), Some(uuid::Uuid::max()), Some("sub"));
            for (txn, trace, sub) in [(None, None, None), every_field] {
                let record = Record {
                    message_id: uuid::Uuid::nil(),
                    transaction_id: txn.map(str::to_owned),
                    trace_id: trace,
                    producer_sub: sub.map(str::to_owned),
                    content: content.clone(),
                };
                let mut blob = Vec::new();
                record.encode(&mut blob);
                assert!(!is_sealed(&blob), "{record:?}");
            }
        }
    }

    #[test]
    fn key_files_hold_hex_or_raw_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let hex_file = dir.path().join("hex");
        std::fs::write(&hex_file, format!("{}\n", "ab".repeat(32))).unwrap();
        let raw_file = dir.path().join("raw");
        std::fs::write(&raw_file, [0xab; 32]).unwrap();
        let a = PayloadKey::from_file(&hex_file).unwrap();
        let b = PayloadKey::from_file(&raw_file).unwrap();
        assert_eq!(a.id(), b.id());
        let short = dir.path().join("short");
        std::fs::write(&short, "abcd").unwrap();
        assert!(matches!(
            PayloadKey::from_file(&short),
            Err(KeyFileError::Malformed(_))
        ));
        assert!(!format!("{a:?}").contains("abab"));
    }
}
