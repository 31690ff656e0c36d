//! Arbitrary bytes as a Kafka request frame: header, version check, body
//! decoding, and for a produce the record batches it carries.
#![no_main]

use kafka_protocol::messages::RequestKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(parsed) = facade::handlers::parse(bytes::Bytes::copy_from_slice(data)) else {
        return;
    };
    if let Some(RequestKind::Produce(request)) = parsed.body {
        for topic in request.topic_data {
            for partition in topic.partition_data {
                if let Some(records) = partition.records {
                    let _ = facade::records::decode_batches(records, 1 << 20);
                }
            }
        }
    }
});
