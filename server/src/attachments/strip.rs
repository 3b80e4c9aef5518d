//! Removing metadata from images without decoding them: the container is walked and only the
//! parts that draw the picture are kept, so EXIF (camera, GPS position, time), XMP and comments
//! never leave the visitor's device through Porch. PDFs and text are stored as they are.

use super::Kind;

/// The file could not be walked as the format its first bytes claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the image is damaged or not what its first bytes say")]
pub struct Malformed;

/// `data` without metadata, for an image; other kinds unchanged.
///
/// # Errors
/// [`Malformed`] when an image's structure does not hold together.
pub fn strip_metadata(kind: Kind, data: &[u8]) -> Result<Vec<u8>, Malformed> {
    match kind {
        Kind::Png => strip_png(data),
        Kind::Jpeg => strip_jpeg(data),
        Kind::Gif => strip_gif(data),
        Kind::Webp => strip_webp(data),
        Kind::Pdf | Kind::Text => Ok(data.to_vec()),
    }
}

fn slice(data: &[u8], from: usize, len: usize) -> Result<&[u8], Malformed> {
    data.get(from..from.checked_add(len).ok_or(Malformed)?)
        .ok_or(Malformed)
}

fn be_u32(data: &[u8], at: usize) -> Result<usize, Malformed> {
    let b = slice(data, at, 4)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

fn le_u32(data: &[u8], at: usize) -> Result<usize, Malformed> {
    let b = slice(data, at, 4)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// PNG chunks that draw the picture (colour, transparency, animation); text chunks, `eXIf`,
/// `tIME` and private chunks are dropped.
const PNG_KEPT: [&[u8; 4]; 15] = [
    b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"cHRM", b"gAMA", b"iCCP", b"sBIT", b"sRGB",
    b"bKGD", b"pHYs", b"acTL", b"fcTL", b"fdAT",
];

fn strip_png(data: &[u8]) -> Result<Vec<u8>, Malformed> {
    let mut out = data.get(..8).ok_or(Malformed)?.to_vec();
    let mut at = 8;
    loop {
        let len = be_u32(data, at)?;
        let whole = slice(data, at, len.checked_add(12).ok_or(Malformed)?)?;
        let kind = &whole[4..8];
        // Every chunk's CRC (of its type and data): decoders skip the check for chunks they do
        // not draw with, and a browser may draw a damaged one differently (docs/widget-protocol.md).
        let (typed, crc) = whole[4..].split_at(whole.len() - 8);
        let mut sum = flate2::Crc::new();
        sum.update(typed);
        if sum.sum().to_be_bytes() != crc {
            return Err(Malformed);
        }
        if PNG_KEPT.iter().any(|k| &k[..] == kind) {
            out.extend_from_slice(whole);
        }
        at += whole.len();
        if kind == b"IEND" {
            return Ok(out);
        }
    }
}

fn strip_jpeg(data: &[u8]) -> Result<Vec<u8>, Malformed> {
    let mut out = vec![0xFF, 0xD8];
    let mut at = 2;
    loop {
        if *data.get(at).ok_or(Malformed)? != 0xFF {
            return Err(Malformed);
        }
        let marker = *data.get(at + 1).ok_or(Malformed)?;
        match marker {
            // Fill bytes before a marker.
            0xFF => at += 1,
            0xD9 => {
                out.extend_from_slice(&[0xFF, 0xD9]);
                return Ok(out);
            }
            0x01 | 0xD0..=0xD7 => {
                out.extend_from_slice(&[0xFF, marker]);
                at += 2;
            }
            // Start of scan: from here on come the compressed picture and the tables between
            // progressive scans; metadata segments only come before the first scan.
            0xDA => {
                out.extend_from_slice(&data[at..]);
                return Ok(out);
            }
            _ => {
                let b = slice(data, at + 2, 2)?;
                let len = usize::from(u16::from_be_bytes([b[0], b[1]]));
                if len < 2 {
                    return Err(Malformed);
                }
                let whole = slice(data, at, len + 2)?;
                if keeps_jpeg_segment(marker, &whole[4..]) {
                    out.extend_from_slice(whole);
                }
                at += whole.len();
            }
        }
    }
}

/// APP0 (JFIF), APP14 (Adobe: how to convert the colours) and an APP2 colour profile stay;
/// APP1 (EXIF, XMP), the other `APPn` segments (maker notes, Photoshop, MPF) and comments go.
fn keeps_jpeg_segment(marker: u8, payload: &[u8]) -> bool {
    match marker {
        0xE0 | 0xEE => true,
        0xE2 => payload.starts_with(b"ICC_PROFILE\0"),
        0xE1..=0xEF | 0xFE => false,
        _ => true,
    }
}

/// Sub-blocks (size byte, bytes) up to and with the empty one; returns where they end.
fn gif_sub_blocks_end(data: &[u8], mut at: usize) -> Result<usize, Malformed> {
    loop {
        let size = usize::from(*data.get(at).ok_or(Malformed)?);
        at += 1 + size;
        if size == 0 {
            return Ok(at);
        }
    }
}

fn gif_table_len(packed: u8) -> usize {
    if packed & 0x80 == 0 {
        0
    } else {
        3 << ((packed & 7) + 1)
    }
}

/// Keeps frames, graphic control and the looping extension; comments and other application
/// extensions (XMP) go.
fn strip_gif(data: &[u8]) -> Result<Vec<u8>, Malformed> {
    let packed = *data.get(10).ok_or(Malformed)?;
    let mut at = 13 + gif_table_len(packed);
    let mut out = slice(data, 0, at)?.to_vec();
    loop {
        match *data.get(at).ok_or(Malformed)? {
            0x3B => {
                out.push(0x3B);
                return Ok(out);
            }
            0x21 => {
                let label = *data.get(at + 1).ok_or(Malformed)?;
                let end = gif_sub_blocks_end(data, at + 2)?;
                let block = slice(data, at, end - at)?;
                let is_loop = label == 0xFF
                    && (block.get(3..14) == Some(b"NETSCAPE2.0")
                        || block.get(3..14) == Some(b"ANIMEXTS1.0"));
                if matches!(label, 0xF9 | 0x01) || is_loop {
                    out.extend_from_slice(block);
                }
                at = end;
            }
            0x2C => {
                let packed = *data.get(at + 9).ok_or(Malformed)?;
                // Descriptor, local colour table, LZW code size, then the image's sub-blocks.
                let data_start = at + 10 + gif_table_len(packed) + 1;
                let end = gif_sub_blocks_end(data, data_start)?;
                out.extend_from_slice(slice(data, at, end - at)?);
                at = end;
            }
            _ => return Err(Malformed),
        }
    }
}

/// Drops the `EXIF` and `XMP ` chunks and clears their flags in `VP8X`.
fn strip_webp(data: &[u8]) -> Result<Vec<u8>, Malformed> {
    let riff_end = le_u32(data, 4)?.checked_add(8).ok_or(Malformed)?;
    let body = data.get(..riff_end).ok_or(Malformed)?;
    let mut chunks = Vec::new();
    let mut at = 12;
    while at < body.len() {
        let len = le_u32(body, at + 4)?;
        let padded = len.checked_add(len & 1).ok_or(Malformed)?;
        let whole = slice(body, at, padded.checked_add(8).ok_or(Malformed)?)?;
        match &whole[..4] {
            b"EXIF" | b"XMP " => {}
            b"VP8X" => {
                let mut chunk = whole.to_vec();
                // Flags byte: bit 3 EXIF present, bit 2 XMP present.
                *chunk.get_mut(8).ok_or(Malformed)? &= !0x0C;
                chunks.extend_from_slice(&chunk);
            }
            _ => chunks.extend_from_slice(whole),
        }
        at += whole.len();
    }
    let size = u32::try_from(chunks.len() + 4).map_err(|_| Malformed)?;
    let mut out = Vec::with_capacity(chunks.len() + 12);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(b"WEBP");
    out.extend_from_slice(&chunks);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_chunk(kind: [u8; 4], data: &[u8]) -> Vec<u8> {
        let mut c = u32::try_from(data.len())
            .expect("len")
            .to_be_bytes()
            .to_vec();
        c.extend_from_slice(&kind);
        c.extend_from_slice(data);
        let mut crc = flate2::Crc::new();
        crc.update(&kind);
        crc.update(data);
        c.extend_from_slice(&crc.sum().to_be_bytes());
        c
    }

    #[test]
    fn png_text_and_exif_chunks_go() {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in [
            (b"IHDR", &b"0123456789abc"[..]),
            (b"tEXt", b"Author\0Ann"),
            (b"eXIf", b"GPS 52.5N"),
            (b"IDAT", b"pixels"),
            (b"IEND", b""),
        ] {
            png.extend(png_chunk(*kind, data));
        }
        let out = strip_png(&png).expect("strip");
        let text = String::from_utf8_lossy(&out);
        assert!(!text.contains("Ann") && !text.contains("GPS"), "{text}");
        assert!(text.contains("IHDR") && text.contains("pixels") && text.contains("IEND"));
        assert_eq!(strip_png(&png[..png.len() - 3]), Err(Malformed));
        // A wrong checksum in any chunk, kept or dropped, drawn or not, is damage.
        for at in ["pixels", "GPS", "IEND"] {
            let mut bad = png.clone();
            let end = text_end(&bad, at);
            bad[end] ^= 1; // the chunk's CRC follows its data
            assert_eq!(strip_png(&bad), Err(Malformed), "{at}");
        }
    }

    /// The index just past the first occurrence of `needle` in `data`.
    fn text_end(data: &[u8], needle: &str) -> usize {
        data.windows(needle.len())
            .position(|w| w == needle.as_bytes())
            .expect("present")
            + needle.len()
    }

    #[test]
    fn jpeg_exif_and_comments_go_and_the_scan_stays() {
        let mut jpeg = vec![0xFF, 0xD8];
        for (marker, payload) in [
            (0xE0, &b"JFIF\0\x01\x01"[..]),
            (0xE1, b"Exif\0\0GPS 52.5N"),
            (0xFE, b"comment by Ann"),
            (0xDB, b"quant"),
        ] {
            jpeg.extend([0xFF, marker]);
            jpeg.extend(u16::try_from(payload.len() + 2).expect("len").to_be_bytes());
            jpeg.extend_from_slice(payload);
        }
        jpeg.extend([0xFF, 0xDA, 0, 2, 1, 2, 3, 0xFF, 0xD9]);
        let out = strip_jpeg(&jpeg).expect("strip");
        let text = String::from_utf8_lossy(&out);
        assert!(!text.contains("GPS") && !text.contains("Ann"), "{text}");
        assert!(text.contains("JFIF") && text.contains("quant"));
        assert!(out.ends_with(&[0xFF, 0xDA, 0, 2, 1, 2, 3, 0xFF, 0xD9]));
    }

    #[test]
    fn gif_comments_go_and_frames_stay() {
        let mut gif = b"GIF89a\x01\x00\x01\x00\x80\x00\x00".to_vec();
        gif.extend([0, 0, 0, 255, 255, 255]); // global colour table of two
        gif.extend(b"\x21\xFE\x0Bby Ann 2026\x00"); // comment
        gif.extend(b"\x2C\0\0\0\0\x01\0\x01\0\0\x02\x02\x44\x01\x00"); // one frame
        gif.push(0x3B);
        let out = strip_gif(&gif).expect("strip");
        assert!(!String::from_utf8_lossy(&out).contains("Ann"));
        assert_eq!(out.len(), gif.len() - 15);
        assert!(out.ends_with(b"\x02\x02\x44\x01\x00\x3B"));
    }

    #[test]
    fn webp_exif_goes_and_its_flag_is_cleared() {
        let mut chunks = Vec::new();
        chunks.extend(b"VP8X\x0A\0\0\0\x0C\0\0\0\0\0\0\0\0\0");
        chunks.extend(b"VP8L\x02\0\0\0ab");
        chunks.extend(b"EXIF\x05\0\0\0GPS!!\0");
        let mut webp = b"RIFF".to_vec();
        webp.extend(u32::try_from(chunks.len() + 4).expect("len").to_le_bytes());
        webp.extend(b"WEBP");
        webp.extend(&chunks);
        let out = strip_webp(&webp).expect("strip");
        assert!(!String::from_utf8_lossy(&out).contains("GPS"));
        assert_eq!(out[20], 0, "EXIF and XMP flags cleared");
        assert_eq!(le_u32(&out, 4).expect("size"), out.len() - 8);
    }
}
