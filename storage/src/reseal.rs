//! Key rotation: sealing again, under the broker's current key, every
//! stored payload sealed under a retired one ([`Engine::reseal`]), after
//! which the retired keys can be dropped.
//!
//! Brokers keep serving meanwhile. Each blob is read and sealed again
//! outside any transaction, then written back in a short write transaction
//! only if its head (marker, key id and nonce) is still the one read: a
//! blob that compaction or an ack rewrote meanwhile is left as its writer
//! left it, and counted, as its plaintext is the same either way.

use crate::error::{Result, StorageError};
use crate::sealing::{SealError, HEADER_LEN};
use crate::sql::reseal::{self, RowKey, SealedTable};
use crate::Engine;

/// Rows whose heads one step reads.
const STEP_ROWS: i64 = 256;

/// Blobs one write transaction replaces: a segment may hold a mebibyte.
const WRITE_BLOBS: usize = 16;

/// What [`Engine::reseal`] did so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ResealReport {
    /// Rows whose payloads were looked at.
    pub examined: u64,
    /// Segments sealed again under the current key.
    pub segments: u64,
    /// Dead letters sealed again under the current key.
    pub dead_letters: u64,
    /// Stale blobs another writer replaced before this one could: run the
    /// rotation again to be sure none of them is still under a retired key.
    pub changed_meanwhile: u64,
}

impl Engine {
    /// Seals again under the current key every segment and dead letter
    /// sealed under another key, in bounded steps; `progress` sees the
    /// report after each step. A payload sealed under a key the broker
    /// does not have stops the rotation with [`SealError::WrongKey`].
    pub async fn reseal(&self, mut progress: impl FnMut(&ResealReport)) -> Result<ResealReport> {
        if !self.inner.sealer.has_key() {
            return Err(StorageError::Sealed(SealError::NoKey));
        }
        let mut report = ResealReport::default();
        for table in [SealedTable::Segments, SealedTable::DeadLetters] {
            let mut after: RowKey = match table {
                SealedTable::Segments => (i64::MIN, i64::MIN),
                SealedTable::DeadLetters => (0, i64::MIN),
            };
            loop {
                let heads = reseal::heads(&self.inner.store, table, after, STEP_ROWS).await?;
                let Some(last) = heads.last() else { break };
                after = last.key();
                report.examined += heads.len() as u64;
                let stale: Vec<_> = heads
                    .into_iter()
                    .filter(|row| self.inner.sealer.is_stale(&row.head))
                    .collect();
                for rows in stale.chunks(WRITE_BLOBS) {
                    self.reseal_rows(table, rows, &mut report).await?;
                }
                progress(&report);
            }
        }
        Ok(report)
    }

    /// Seals the blobs of `rows` again and writes back those unchanged.
    async fn reseal_rows(
        &self,
        table: SealedTable,
        rows: &[reseal::BlobHead],
        report: &mut ResealReport,
    ) -> Result<()> {
        let sealer = &self.inner.sealer;
        let mut sealed = Vec::with_capacity(rows.len());
        for row in rows {
            // Gone since its head was read: retention or a consumed letter.
            let Some(blob) = reseal::blob(&self.inner.store, table, row.key()).await? else {
                continue;
            };
            if blob.get(..HEADER_LEN) != Some(&row.head[..]) {
                report.changed_meanwhile += 1;
                continue;
            }
            sealed.push((row, sealer.seal(&sealer.open(blob)?)?));
        }
        let mut tx = self.inner.store.begin_write().await?;
        let mut replaced = 0;
        for (row, blob) in &sealed {
            if reseal::replace(&mut tx.conn(), table, row.key(), &row.head, blob).await? {
                replaced += 1;
            } else {
                report.changed_meanwhile += 1;
            }
        }
        tx.commit().await?;
        match table {
            SealedTable::Segments => report.segments += replaced,
            SealedTable::DeadLetters => report.dead_letters += replaced,
        }
        Ok(())
    }
}
