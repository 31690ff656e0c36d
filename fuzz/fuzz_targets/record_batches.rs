//! Arbitrary bytes as the records of a produce: batch headers, CRC,
//! decompression within a budget, records and headers.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = facade::records::decode_batches(bytes::Bytes::copy_from_slice(data), 1 << 20);
});
