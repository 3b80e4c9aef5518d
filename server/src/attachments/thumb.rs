//! Thumbnails of images (docs/widget.md, "Attachments"): decoded within fixed limits, scaled
//! to fit [`THUMB_SIDE`] and encoded again (JPEG for JPEG photos, PNG for the rest). A
//! decompression bomb is refused from the size its header declares, before a pixel is decoded.
//! Blocking work: call it from a blocking thread, never on the async runtime.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};

use super::Kind;
use super::strip::Malformed;

/// Longest side of a thumbnail, in pixels.
pub const THUMB_SIDE: u32 = 320;
/// Most pixels an accepted image may have: a 48-megapixel phone photo fits; decoding one
/// takes at most 4 bytes a pixel (200 MB), which bounds what one upload can make us allocate.
pub const MAX_PIXELS: u64 = 50_000_000;
/// Longest side an accepted image may have.
const MAX_SIDE: u32 = 20_000;
/// Most bytes reading an image's header may allocate (its metadata, such as an ICC colour
/// profile, which is rarely over 1 MB).
const HEADER_ALLOC: u64 = 16 * 1024 * 1024;
/// JPEG quality of a photo's thumbnail: small, and sharp enough at 320 px.
const JPEG_QUALITY: u8 = 80;

/// An image's thumbnail, ready to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thumbnail {
    pub content_type: &'static str,
    pub data: Vec<u8>,
}

/// The image declares more than [`MAX_PIXELS`] pixels or a side over 20,000 pixels.
#[derive(Debug, thiserror::Error)]
#[error("the image is larger than 50 megapixels or 20,000 pixels a side")]
pub struct TooLarge;

/// Why an image is not taken.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
    /// Its header does not say its size, so nothing bounds what a browser would decode.
    #[error(transparent)]
    Unreadable(#[from] Malformed),
}

/// The thumbnail of an image of `kind`: `Ok(None)` for a file that is not an image, or an
/// image whose pixels the decoder cannot read (it is then shown without one).
///
/// # Errors
/// [`Refused::TooLarge`] when the image's header declares more pixels than Porch decodes,
/// [`Refused::Unreadable`] when the header cannot be read.
pub fn make_thumbnail(kind: Kind, data: &[u8]) -> Result<Option<Thumbnail>, Refused> {
    let format = match kind {
        Kind::Png => ImageFormat::Png,
        Kind::Jpeg => ImageFormat::Jpeg,
        Kind::Gif => ImageFormat::Gif,
        Kind::Webp => ImageFormat::WebP,
        Kind::Pdf | Kind::Text => return Ok(None),
    };
    let reader = |limits: Limits| {
        let mut reader = ImageReader::with_format(Cursor::new(data), format);
        reader.limits(limits);
        reader
    };
    // The header alone, read without the side limits (under them a side over 20,000 failed
    // here like an unreadable header) but within an allocation bound: a header can carry a
    // compressed colour profile of any size. An image whose size cannot be read is refused:
    // stored, it would be served whole to agents' browsers, whatever size they read in it.
    let mut header = Limits::no_limits();
    header.max_alloc = Some(HEADER_ALLOC);
    let (width, height) = reader(header).into_dimensions().map_err(|_| Malformed)?;
    if width > MAX_SIDE || height > MAX_SIDE || u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(TooLarge.into());
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    // Room for the decoded pixels plus the decoder's own buffers.
    limits.max_alloc = Some(MAX_PIXELS * 4 + 64 * 1024 * 1024);
    let Ok(image) = reader(limits).decode() else {
        return Ok(None);
    };
    let small = if width <= THUMB_SIDE && height <= THUMB_SIDE {
        image
    } else {
        image.thumbnail(THUMB_SIDE, THUMB_SIDE)
    };
    Ok(encode(kind, &small))
}

/// `small` as JPEG (for a JPEG photo, which has no transparency) or PNG.
fn encode(kind: Kind, small: &DynamicImage) -> Option<Thumbnail> {
    let mut data = Vec::new();
    if kind == Kind::Jpeg {
        let rgb = DynamicImage::ImageRgb8(small.to_rgb8());
        JpegEncoder::new_with_quality(&mut data, JPEG_QUALITY)
            .encode_image(&rgb)
            .ok()?;
        return Some(Thumbnail {
            content_type: "image/jpeg",
            data,
        });
    }
    small
        .write_to(&mut Cursor::new(&mut data), ImageFormat::Png)
        .ok()?;
    Some(Thumbnail {
        content_type: "image/png",
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = DynamicImage::new_rgba8(width, height);
        let mut data = Vec::new();
        image
            .write_to(&mut Cursor::new(&mut data), ImageFormat::Png)
            .expect("encode");
        data
    }

    /// A PNG chunk: length, type, data and CRC.
    fn chunk(kind: [u8; 4], data: &[u8]) -> Vec<u8> {
        let mut crc = flate2::Crc::new();
        crc.update(&kind);
        crc.update(data);
        let length = u32::try_from(data.len()).expect("short").to_be_bytes();
        [&length[..], &kind, data, &crc.sum().to_be_bytes()].concat()
    }

    fn dimensions(thumb: &Thumbnail) -> (u32, u32) {
        let image = image::load_from_memory(&thumb.data).expect("decode");
        (image.width(), image.height())
    }

    #[test]
    fn a_wide_image_is_scaled_to_fit_keeping_its_shape() {
        let thumb = make_thumbnail(Kind::Png, &png(1000, 500))
            .expect("accepted")
            .expect("made");
        assert_eq!(thumb.content_type, "image/png");
        assert_eq!(dimensions(&thumb), (320, 160));
    }

    #[test]
    fn a_small_image_is_not_enlarged() {
        let thumb = make_thumbnail(Kind::Png, &png(40, 30))
            .expect("accepted")
            .expect("made");
        assert_eq!(dimensions(&thumb), (40, 30));
    }

    #[test]
    fn a_jpeg_photo_gets_a_jpeg_thumbnail() {
        let mut data = Vec::new();
        JpegEncoder::new(&mut data)
            .encode_image(&DynamicImage::new_rgb8(640, 640))
            .expect("encode");
        let thumb = make_thumbnail(Kind::Jpeg, &data)
            .expect("accepted")
            .expect("made");
        assert_eq!(thumb.content_type, "image/jpeg");
        assert_eq!(dimensions(&thumb), (320, 320));
    }

    /// A PNG that declares `width` × `height` and holds no pixels (a bomb's first bytes).
    fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in [
            (
                &b"IHDR"[..],
                [
                    &width.to_be_bytes()[..],
                    &height.to_be_bytes(),
                    &[8, 6, 0, 0, 0],
                ]
                .concat(),
            ),
            (b"IDAT", b"x\x9c\x03\x00\x00\x00\x00\x01".to_vec()),
            (b"IEND", Vec::new()),
        ] {
            png.extend(u32::try_from(data.len()).expect("short").to_be_bytes());
            let mut crc = flate2::Crc::new();
            crc.update(kind);
            crc.update(&data);
            png.extend_from_slice(kind);
            png.extend(data);
            png.extend(crc.sum().to_be_bytes());
        }
        png
    }

    #[test]
    fn an_image_too_large_by_either_side_or_its_pixels_is_refused_from_its_header() {
        for (width, height) in [(20_001, 1), (1, 20_001), (60_000, 60_000), (10_000, 10_000)] {
            let refused = make_thumbnail(Kind::Png, &png_header(width, height));
            assert!(refused.is_err(), "{width}x{height}: {refused:?}");
        }
        // At the limits it is read as an image (this one has no pixels, so no thumbnail).
        let at_limit = make_thumbnail(Kind::Png, &png_header(20_000, 2_500));
        assert!(matches!(at_limit, Ok(None)), "{at_limit:?}");
    }

    #[test]
    fn an_image_whose_profile_is_over_the_header_bound_still_gets_a_thumbnail() {
        use std::io::Write;
        // A colour profile of 32 MiB of zeros, compressed to a few dozen KiB, spliced into a
        // small valid PNG before its pixels: the header read leaves it (it is over
        // HEADER_ALLOC) and the image is still read. Without the bound the header read
        // allocated the whole profile: a 640 MiB one took the test to 682 MB of memory, with
        // the bound 299 MB, the decoder's own limit (measured by hand with `time -v`).
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..32 {
            zlib.write_all(&zeros).expect("compress");
        }
        let profile = [&b"icc\0\0"[..], &zlib.finish().expect("compress")].concat();
        let small = png(10, 10);
        // After the signature (8 bytes) and IHDR (25).
        let bomb = [&small[..33], &chunk(*b"iCCP", &profile), &small[33..]].concat();
        let read = make_thumbnail(Kind::Png, &bomb);
        assert!(matches!(read, Ok(Some(_))), "{read:?}");
    }

    #[test]
    fn files_that_are_not_images_and_images_with_unreadable_pixels_get_none() {
        assert!(
            make_thumbnail(Kind::Pdf, b"%PDF-1.4")
                .expect("ok")
                .is_none()
        );
        // The signature and header of a 10 x 10 image, then pixels that are not zlib data.
        let header = &png(10, 10)[..33];
        let broken = [
            header,
            &chunk(*b"IDAT", b"\x78\x9c\xff\xff"),
            &chunk(*b"IEND", b""),
        ]
        .concat();
        assert!(make_thumbnail(Kind::Png, &broken).expect("ok").is_none());
    }

    #[test]
    fn an_image_whose_header_cannot_be_read_is_refused() {
        // A PNG signature and a header chunk too short to hold a size.
        let headless = &png(10, 10)[..20];
        let refused = make_thumbnail(Kind::Png, headless);
        assert!(
            matches!(refused, Err(Refused::Unreadable(_))),
            "{refused:?}"
        );
    }
}
