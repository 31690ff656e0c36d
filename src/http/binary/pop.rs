//! The framed pop answer (spec 4.5, `QPF1`):
//!
//! ```text
//! answer := "QPF1" version:u8 [own_len:u32 own_json (version 1)]
//!           queue:str16 leaseId:str16 consumerGroup:str16 claims:u32 claim*
//! claim  := partitionId:u64 partition:str16 start:u64 end:u64 deliveryAttempt:u32 records:u32 record*
//! record := base_offset:u64 created_at_us:i64 count:u32 codec:u8 len:u32 bytes
//! ```
//!
//! One queue, lease and group cover the answer and one delivery attempt a
//! claim, and a message carries no Kafka fields, `queue` or `retryCount`:
//! when the JSON answer would say more than that, [`encode`] declines and
//! the pop answers JSON, so both forms always carry the same content.

use storage::{Content, PopOutcome, PoppedMessage};

use super::frames;

/// The Content-Type of a framed pop answer (informational for clients).
pub(in crate::http) const CONTENT_TYPE: &str = "application/x-queen-pop";

const RAW: u8 = 0;

/// The framed answer to a non-empty pop by `group`, with `own` (the
/// answer's non-message keys, a JSON object) when there are any; `None`
/// when a frame cannot carry what the JSON answer would.
pub(in crate::http) fn encode(
    outcome: &PopOutcome,
    group: &str,
    own: Option<&serde_json::Value>,
) -> Option<Vec<u8>> {
    let first = outcome.messages.first()?;
    let claims = claims(&outcome.messages)?;
    if claims.len() != outcome.partitions_claimed {
        return None;
    }
    let payload: usize = outcome
        .messages
        .iter()
        .map(|m| match &m.record.content {
            Content::Json(json) => json.len(),
            Content::Kafka(_) => 0,
        })
        .sum();
    let mut out = Vec::with_capacity(64 + payload + 64 * outcome.messages.len());
    out.extend_from_slice(b"QPF1");
    match own {
        Some(own) => {
            let text = own.to_string();
            out.push(1);
            out.extend_from_slice(&u32::try_from(text.len()).ok()?.to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        None => out.push(0),
    }
    str16(&mut out, &first.queue)?;
    str16(&mut out, &outcome.lease_id)?;
    str16(&mut out, group)?;
    out.extend_from_slice(&u32::try_from(claims.len()).ok()?.to_le_bytes());
    for claim in claims {
        claim_into(&mut out, claim)?;
    }
    Some(out)
}

/// The messages split into claims, one per partition in answer order;
/// `None` when something only the JSON answer can say is there.
fn claims(messages: &[PoppedMessage]) -> Option<Vec<&[PoppedMessage]>> {
    let first = messages.first()?;
    let mut claims: Vec<&[PoppedMessage]> = Vec::new();
    let mut start = 0;
    for (i, m) in messages.iter().enumerate() {
        let framable = matches!(m.record.content, Content::Json(_))
            && m.queue == first.queue
            && m.lease_id == first.lease_id
            && m.retry_count == 0;
        if !framable {
            return None;
        }
        if i > start && m.partition_id != messages[start].partition_id {
            claims.push(&messages[start..i]);
            start = i;
        }
    }
    claims.push(&messages[start..]);
    // A partition that comes back later, or two delivery attempts in one
    // claim, would need a second claim of the same partition.
    for (i, claim) in claims.iter().enumerate() {
        let attempt = claim[0].delivery_attempt;
        if claim.iter().any(|m| m.delivery_attempt != attempt)
            || claims[..i]
                .iter()
                .any(|c| c[0].partition_id == claim[0].partition_id)
        {
            return None;
        }
    }
    Some(claims)
}

fn claim_into(out: &mut Vec<u8>, claim: &[PoppedMessage]) -> Option<()> {
    let first = claim.first()?;
    let last = claim.last()?;
    out.extend_from_slice(&u64::try_from(first.partition_id.get()).ok()?.to_le_bytes());
    str16(out, &first.partition)?;
    out.extend_from_slice(&u64::try_from(first.offset).ok()?.to_le_bytes());
    out.extend_from_slice(&u64::try_from(last.offset).ok()?.to_le_bytes());
    out.extend_from_slice(&u32::try_from(first.delivery_attempt).ok()?.to_le_bytes());
    let count_at = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut records = 0u32;
    let mut rest = claim;
    while let Some(head) = rest.first() {
        // A record: consecutive offsets stored at the same millisecond.
        let run = 1 + rest
            .windows(2)
            .take_while(|w| {
                w[1].offset == w[0].offset + 1 && w[1].created_at_ms == head.created_at_ms
            })
            .count();
        let (record, tail) = rest.split_at(run);
        record_into(out, record)?;
        records += 1;
        rest = tail;
    }
    out[count_at..count_at + 4].copy_from_slice(&records.to_le_bytes());
    Some(())
}

fn record_into(out: &mut Vec<u8>, record: &[PoppedMessage]) -> Option<()> {
    let first = record.first()?;
    out.extend_from_slice(&u64::try_from(first.offset).ok()?.to_le_bytes());
    out.extend_from_slice(&first.created_at_ms.checked_mul(1000)?.to_le_bytes());
    out.extend_from_slice(&u32::try_from(record.len()).ok()?.to_le_bytes());
    out.push(RAW);
    let len_at = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    for m in record {
        let Content::Json(json) = &m.record.content else {
            return None;
        };
        // The effective transaction id, without allocating a minted one.
        let mut minted = [0u8; 36];
        let transaction_id = match &m.record.transaction_id {
            Some(t) => t.as_str(),
            None => m.record.message_id.hyphenated().encode_lower(&mut minted),
        };
        frames::encode(&m.record, transaction_id, json, out)?;
    }
    let len = u32::try_from(out.len() - len_at - 4).ok()?;
    out[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
    Some(())
}

fn str16(out: &mut Vec<u8>, text: &str) -> Option<()> {
    out.extend_from_slice(&u16::try_from(text.len()).ok()?.to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    Some(())
}
