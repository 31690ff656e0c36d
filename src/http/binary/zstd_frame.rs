//! One zstd frame, inflated only after its declared content size is
//! checked against the caller's bound: a small frame that would inflate
//! to gigabytes (a zstd bomb) is refused before any memory is taken.

use zstd::zstd_safe;

use super::BinaryError;

/// The content of `frame`, which must be exactly one zstd frame that
/// declares its content size, at most `limit` bytes, and (when given)
/// exactly `expected` bytes.
pub(super) fn inflate(
    frame: &[u8],
    expected: Option<usize>,
    limit: usize,
) -> Result<Vec<u8>, BinaryError> {
    let bad = |e: &dyn std::fmt::Display| BinaryError::Zstd(e.to_string());
    let size = match zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) => size,
        Ok(None) => return Err(bad(&"the frame does not declare its content size")),
        Err(_) => return Err(bad(&"not a zstd frame")),
    };
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s <= limit)
        .ok_or_else(|| {
            bad(&format!(
                "content of {size} bytes exceeds the limit of {limit}"
            ))
        })?;
    if expected.is_some_and(|e| e != size) {
        return Err(bad(&format!(
            "content of {size} bytes where raw_len says {}",
            expected.unwrap_or_default()
        )));
    }
    match zstd_safe::find_frame_compressed_size(frame) {
        Ok(n) if n == frame.len() => {}
        Ok(n) => {
            return Err(bad(&format!(
                "{} bytes follow the frame",
                frame.len().saturating_sub(n)
            )))
        }
        Err(code) => return Err(bad(&zstd_safe::get_error_name(code))),
    }
    let out = zstd::bulk::decompress(frame, size).map_err(|e| bad(&e))?;
    if out.len() != size {
        return Err(bad(&format!(
            "the frame inflated to {} bytes, not its declared {size}",
            out.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflates_a_frame_with_its_size_and_refuses_bombs_and_garbage() {
        let raw = vec![7u8; 10_000];
        let frame = zstd::bulk::compress(&raw, 1).expect("compress");
        assert_eq!(
            inflate(&frame, Some(10_000), 10_000).ok(),
            Some(raw.clone())
        );
        assert!(inflate(&frame, None, 9_999).is_err(), "over the limit");
        assert!(
            inflate(&frame, Some(9_000), 1 << 20).is_err(),
            "raw_len differs"
        );
        assert!(inflate(b"garbage!", None, 100).is_err());
        let mut trailing = frame.clone();
        trailing.push(0);
        assert!(inflate(&trailing, None, 1 << 20).is_err());
        assert!(inflate(&frame[..frame.len() - 1], None, 1 << 20).is_err());
        // A frame without its content size (a streaming encoder's) is refused.
        let mut encoder = zstd::stream::Encoder::new(Vec::new(), 1).expect("encoder");
        std::io::Write::write_all(&mut encoder, &raw).expect("write");
        let streamed = encoder.finish().expect("finish");
        assert!(inflate(&streamed, None, 1 << 20).is_err());
    }
}
