//! The client side of the native binary forms (spec section 4), written
//! from the spec for the tests and benches: binary push and transaction
//! bodies, and a decoder of framed pop answers into the JSON shape the
//! client rebuilds (with `queue`/`retryCount`, which a frame leaves out,
//! absent).

#![allow(dead_code)] // each test binary uses a part

use serde_json::{json, Value};
use uuid::Uuid;

/// The Content-Type of the binary bodies.
pub(crate) const PUSH_TYPE: &str = "application/x-queen-push";

/// One group of a push: a queue, a partition and `(transaction id,
/// payload JSON)` items (`""` = the broker mints it).
pub(crate) struct Group<'a> {
    pub queue: &'a str,
    pub partition: &'a str,
    pub items: Vec<(String, String)>,
}

fn str16(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

/// `groups:u32 group*` of the unframed form, with transaction ids when
/// `with_txn` (flag 4).
fn item_groups(groups: &[Group<'_>], with_txn: bool) -> Vec<u8> {
    let mut out = (groups.len() as u32).to_le_bytes().to_vec();
    for g in groups {
        str16(&mut out, g.queue);
        str16(&mut out, g.partition);
        out.extend_from_slice(&(g.items.len() as u32).to_le_bytes());
        for (txn, payload) in &g.items {
            if with_txn {
                str16(&mut out, txn);
            }
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(payload.as_bytes());
        }
    }
    out
}

/// One stored frame (4.4) with flags 0, as a client builds it.
pub(crate) fn frame(out: &mut Vec<u8>, id: Uuid, txn: &str, payload: &str) {
    let len = 1 + 16 + 2 + txn.len() + payload.len();
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.push(0);
    out.extend_from_slice(id.as_bytes());
    str16(out, txn);
    out.extend_from_slice(payload.as_bytes());
}

/// `groups:u32 group*` of the framed form (flag 8): each group's items as
/// frames with client-minted ids, one zstd frame per group.
fn frame_groups(groups: &[Group<'_>]) -> Vec<u8> {
    let mut out = (groups.len() as u32).to_le_bytes().to_vec();
    for g in groups {
        let mut frames = Vec::new();
        for (txn, payload) in &g.items {
            let id = Uuid::now_v7();
            let txn = if txn.is_empty() {
                id.to_string()
            } else {
                txn.clone()
            };
            frame(&mut frames, id, &txn, payload);
        }
        let z = zstd::bulk::compress(&frames, 1).expect("compress");
        str16(&mut out, g.queue);
        str16(&mut out, g.partition);
        out.extend_from_slice(&(g.items.len() as u32).to_le_bytes());
        out.extend_from_slice(&(z.len() as u32).to_le_bytes());
        out.extend_from_slice(&z);
    }
    out
}

/// A `QPB1` body with `flags` (1 zstd, 2 counts, 4 transaction ids, 8 frames).
pub(crate) fn push_body(groups: &[Group<'_>], flags: u8) -> Vec<u8> {
    let payload = if flags & 8 != 0 {
        frame_groups(groups)
    } else {
        item_groups(groups, flags & 4 != 0)
    };
    let mut out = b"QPB1".to_vec();
    out.push(flags);
    if flags & 1 != 0 {
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend(zstd::bulk::compress(&payload, 1).expect("compress"));
    } else {
        out.extend(payload);
    }
    out
}

/// A `QTB1` body: the JSON `head`, then `groups` as frames.
pub(crate) fn transaction_body(head: &Value, groups: &[Group<'_>], flags: u8) -> Vec<u8> {
    let head = head.to_string();
    let mut out = b"QTB1".to_vec();
    out.push(flags);
    out.extend_from_slice(&(head.len() as u32).to_le_bytes());
    out.extend_from_slice(head.as_bytes());
    out.extend(frame_groups(groups));
    out
}

struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take(2).try_into().expect("2"))
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().expect("4"))
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8"))
    }
    fn text(&mut self) -> String {
        let n = self.u16() as usize;
        String::from_utf8(self.take(n).to_vec()).expect("utf8")
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of microseconds since the epoch, by hand.
fn iso(us: i64) -> String {
    let ms = us.div_euclid(1000);
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms.rem_euclid(1000)
    )
}

/// The header of a framed answer and its claim being walked.
pub(crate) struct Claim {
    pub partition_id: String,
    pub partition: String,
    pub delivery_attempt: u32,
}

/// One delivered message of a framed answer, its payload still bytes.
pub(crate) struct Framed<'a> {
    pub id: Uuid,
    pub trace: Option<Uuid>,
    pub transaction_id: String,
    pub producer_sub: Option<String>,
    pub created_at_us: i64,
    pub offset: u64,
    pub payload: &'a [u8],
}

/// The head of a framed answer: its own JSON, queue, lease and group.
pub(crate) struct Head {
    pub own: Value,
    pub queue: String,
    pub lease: String,
    pub group: String,
    pub claims: u32,
}

/// Walks a framed pop answer: `on` sees each delivered message with its
/// claim, in answer order. Panics on a malformed answer.
pub(crate) fn walk<'a>(bytes: &'a [u8], mut on: impl FnMut(&Claim, Framed<'a>)) -> Head {
    let mut r = In(bytes);
    assert_eq!(r.take(4), b"QPF1");
    let own = match r.u8() {
        0 => Value::Null,
        1 => {
            let n = r.u32() as usize;
            serde_json::from_slice(r.take(n)).expect("own JSON")
        }
        v => panic!("version {v}"),
    };
    let (queue, lease, group) = (r.text(), r.text(), r.text());
    let claims = r.u32();
    for _ in 0..claims {
        let claim = Claim {
            partition_id: r.u64().to_string(),
            partition: r.text(),
            delivery_attempt: 0,
        };
        let (start, end) = (r.u64(), r.u64());
        let claim = Claim {
            delivery_attempt: r.u32(),
            ..claim
        };
        for _ in 0..r.u32() {
            let base = r.u64();
            let created_at_us = r.u64() as i64;
            let count = r.u32();
            assert_eq!(r.u8(), 0, "raw codec");
            let n = r.u32() as usize;
            let mut frames = In(r.take(n));
            for i in 0..u64::from(count) {
                let n = frames.u32() as usize;
                let mut f = In(frames.take(n));
                let flags = f.u8();
                let id = Uuid::from_slice(f.take(16)).expect("id");
                let trace = (flags & 1 != 0).then(|| Uuid::from_slice(f.take(16)).expect("trace"));
                let transaction_id = f.text();
                let producer_sub = (flags & 2 != 0).then(|| f.text());
                let offset = base + i;
                if (start..=end).contains(&offset) {
                    on(
                        &claim,
                        Framed {
                            id,
                            trace,
                            transaction_id,
                            producer_sub,
                            created_at_us,
                            offset,
                            payload: f.0,
                        },
                    );
                }
            }
            assert!(frames.0.is_empty(), "record bytes beyond its frames");
        }
    }
    assert!(r.0.is_empty(), "bytes after the last claim");
    Head {
        own,
        queue,
        lease,
        group,
        claims,
    }
}

/// A framed pop answer as the client rebuilds it (`queen/http/pop_frames.py`).
pub(crate) fn decode_pop(bytes: &[u8]) -> Value {
    let mut messages = Vec::new();
    let mut first: Option<(String, String)> = None;
    let head = walk(bytes, |claim, m| {
        first.get_or_insert_with(|| (claim.partition.clone(), claim.partition_id.clone()));
        messages.push(json!({
            "id": m.id.to_string(), "transactionId": m.transaction_id,
            "traceId": m.trace.map(|t| t.to_string()),
            "data": if m.payload.is_empty() { Value::Null } else {
                serde_json::from_slice(m.payload).expect("payload JSON") },
            "producerSub": m.producer_sub, "createdAt": iso(m.created_at_us),
            "partitionId": claim.partition_id, "partition": claim.partition,
            "deliveryAttempt": claim.delivery_attempt, "offset": m.offset,
        }));
    });
    let (partition, partition_id) = first.unwrap_or_default();
    for m in &mut messages {
        m["leaseId"] = json!(head.lease);
        m["consumerGroup"] = json!(head.group);
    }
    let mut answer = json!({
        "success": true, "queue": head.queue, "partition": partition,
        "partitionId": partition_id, "leaseId": head.lease, "consumerGroup": head.group,
        "messages": messages, "partitionsClaimed": head.claims,
    });
    if let Value::Object(own) = head.own {
        for (k, v) in own {
            answer[k] = v;
        }
    }
    answer
}

/// A JSON pop answer without the keys a frame leaves out (`queue` and
/// `retryCount` of each message), for comparing with [`decode_pop`].
pub(crate) fn comparable(mut json: Value) -> Value {
    if let Some(messages) = json["messages"].as_array_mut() {
        for m in messages {
            if let Some(m) = m.as_object_mut() {
                m.remove("queue");
                m.remove("retryCount");
            }
        }
    }
    json
}
