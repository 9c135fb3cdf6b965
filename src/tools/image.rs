//! Recognizing images by their first bytes, as Pi's read does.
//!
//! The file name says nothing: a `.png` that is text is read as text, and an
//! image called `notes.txt` is sent as an image. The rules are Pi's: PNG needs
//! an IHDR chunk and must not be animated (an APNG is not sent as an image),
//! JPEG-LS is not JPEG, BMP needs a plausible header.

/// How many leading bytes the detection looks at (Pi's sniff size).
pub(crate) const SNIFF_BYTES: usize = 4100;

const PNG_SIGNATURE: &[u8] = &[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/// The MIME type of an image Pi recognizes, from the file's first bytes.
pub(crate) fn detect_mime_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0xff, 0xd8, 0xff]) {
        // 0xF7 is JPEG-LS, which models cannot take.
        return (head.get(3) != Some(&0xf7)).then_some("image/jpeg");
    }
    if head.starts_with(PNG_SIGNATURE) {
        return (is_png(head) && !is_animated_png(head)).then_some("image/png");
    }
    if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        return Some("image/gif");
    }
    if head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        return Some("image/webp");
    }
    if head.starts_with(b"BM") && is_bmp(head) {
        return Some("image/bmp");
    }
    None
}

/// True for the types that can be sent inline as they are; Pi converts the
/// others (BMP) to PNG first.
pub(crate) fn is_inline_type(mime: &str) -> bool {
    matches!(
        mime,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    )
}

fn is_png(b: &[u8]) -> bool {
    b.len() >= 16 && u32_be(b, PNG_SIGNATURE.len()) == 13 && b.get(12..16) == Some(b"IHDR")
}

/// An `acTL` chunk before the first `IDAT` marks an animated PNG.
fn is_animated_png(b: &[u8]) -> bool {
    let mut offset = PNG_SIGNATURE.len();
    while offset + 8 <= b.len() {
        let chunk_len = u32_be(b, offset) as usize;
        match b.get(offset + 4..offset + 8) {
            Some(b"acTL") => return true,
            Some(b"IDAT") => return false,
            _ => {}
        }
        let next = offset
            .saturating_add(8)
            .saturating_add(chunk_len)
            .saturating_add(4);
        if next <= offset || next > b.len() {
            return false;
        }
        offset = next;
    }
    false
}

fn is_bmp(b: &[u8]) -> bool {
    if b.len() < 26 {
        return false;
    }
    let declared_size = u32_le(b, 2);
    let pixel_offset = u32_le(b, 10);
    let dib_size = u32_le(b, 14);
    if declared_size != 0 && declared_size < 26 {
        return false;
    }
    if u64::from(pixel_offset) < 14 + u64::from(dib_size) {
        return false;
    }
    if declared_size != 0 && pixel_offset >= declared_size {
        return false;
    }
    let (planes, bits) = if dib_size == 12 {
        (u16_le(b, 22), u16_le(b, 24))
    } else if (40..=124).contains(&dib_size) {
        if b.len() < 30 {
            return false;
        }
        (u16_le(b, 26), u16_le(b, 28))
    } else {
        return false;
    };
    planes == 1 && [1, 4, 8, 16, 24, 32].contains(&bits)
}

/// Bytes past the end read as 0, as in Pi.
fn byte(b: &[u8], i: usize) -> u32 {
    b.get(i).copied().map_or(0, u32::from)
}

fn u16_le(b: &[u8], i: usize) -> u32 {
    byte(b, i) | byte(b, i + 1) << 8
}

fn u32_le(b: &[u8], i: usize) -> u32 {
    byte(b, i) | byte(b, i + 1) << 8 | byte(b, i + 2) << 16 | byte(b, i + 3) << 24
}

fn u32_be(b: &[u8], i: usize) -> u32 {
    byte(b, i) << 24 | byte(b, i + 1) << 16 | byte(b, i + 2) << 8 | byte(b, i + 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1x1 PNG's first chunks.
    fn png_head(extra_chunk: &[u8; 4]) -> Vec<u8> {
        let mut b = PNG_SIGNATURE.to_vec();
        b.extend_from_slice(&13u32.to_be_bytes());
        b.extend_from_slice(b"IHDR");
        b.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]);
        b.extend_from_slice(&[0; 4]); // CRC, not checked
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(extra_chunk);
        b.extend_from_slice(&[0; 4]);
        b
    }

    #[test]
    fn detects_by_magic_bytes_like_pi() {
        assert_eq!(detect_mime_type(&png_head(b"IDAT")), Some("image/png"));
        assert_eq!(detect_mime_type(&png_head(b"acTL")), None, "APNG");
        assert_eq!(detect_mime_type(PNG_SIGNATURE), None, "no IHDR");
        assert_eq!(
            detect_mime_type(&[0xff, 0xd8, 0xff, 0xe0]),
            Some("image/jpeg")
        );
        assert_eq!(detect_mime_type(&[0xff, 0xd8, 0xff, 0xf7]), None, "JPEG-LS");
        assert_eq!(detect_mime_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(
            detect_mime_type(b"RIFF\0\0\0\0WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(detect_mime_type(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(detect_mime_type(b"BM"), None, "too short for a BMP");
        assert_eq!(detect_mime_type(b"\x89PNG but text"), None);
        assert_eq!(detect_mime_type(b""), None);
    }

    #[test]
    fn detects_a_bmp_header() {
        let mut bmp = vec![0u8; 54];
        bmp[..2].copy_from_slice(b"BM");
        bmp[2..6].copy_from_slice(&58u32.to_le_bytes());
        bmp[10..14].copy_from_slice(&54u32.to_le_bytes());
        bmp[14..18].copy_from_slice(&40u32.to_le_bytes());
        bmp[26..28].copy_from_slice(&1u16.to_le_bytes());
        bmp[28..30].copy_from_slice(&24u16.to_le_bytes());
        assert_eq!(detect_mime_type(&bmp), Some("image/bmp"));
        bmp[28] = 7;
        assert_eq!(detect_mime_type(&bmp), None);
    }
}
