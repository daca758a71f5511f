//! The 8-bit BMP reader of Valve's HL1 studiomdl (`goldsrc.md` §8.3), quirks included.
//!
//! What it accepts and how it reads it:
//! * a 14-byte file header whose two reserved fields are 0 (the `BM` magic is not checked);
//! * a 40-byte info header with `biSize` 40 and one plane, 8 bits per pixel, no compression;
//! * a palette of `biClrUsed` BGRx entries (256 when 0), the rest black;
//! * the pixel bytes **from right after the palette up to `bfSize`** (`bfOffBits` is ignored),
//!   rows padded to 4 bytes, stored bottom-up; they are returned top-down.
//!
//! No maintained crate exposes raw palette indices *and* reads the pixels the way Valve's tool
//! does (ignoring `bfOffBits`), so this is a small reader of our own. Every failure is a
//! [`BmpError`]; it never panics, whatever the bytes.

use std::fmt;

use crate::ir::model::Image;

/// Why a BMP cannot be used. Valve's tool reports these as "error <code> reading BMP image"
/// with the code given by [`BmpError::valve_code`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BmpError {
    /// Shorter than the 14-byte file header.
    FileHeaderTruncated { len: usize },
    /// A reserved field of the file header is not 0.
    ReservedNotZero,
    /// Shorter than the 40-byte info header.
    InfoHeaderTruncated { len: usize },
    /// `biSize` is not 40 or `biPlanes` is not 1 (other header versions are not read).
    InfoHeader { size: u32, planes: u16 },
    /// Not 8 bits per pixel.
    BitCount(u16),
    /// Compressed (`biCompression` ≠ 0).
    Compressed(u32),
    /// More than 256 palette entries.
    PaletteTooLarge(u32),
    /// The palette runs past the end of the file.
    PaletteTruncated { entries: u32, available: usize },
    /// Width or height is 0 or negative (a top-down BMP), or too large.
    Dimensions { width: i32, height: i32 },
    /// `bfSize` ends before the pixels start, or after the end of the file.
    PixelRange { size: u32, start: usize, len: usize },
    /// Fewer pixel bytes than the image needs.
    PixelsShort { need: usize, have: usize },
}

impl BmpError {
    /// The number Valve's tool prints ("error -3000 reading BMP image").
    pub fn valve_code(&self) -> i32 {
        match self {
            BmpError::FileHeaderTruncated { .. } => -2,
            BmpError::ReservedNotZero => -2000,
            BmpError::InfoHeaderTruncated { .. } => -3,
            BmpError::InfoHeader { .. } => -3000,
            BmpError::BitCount(_) => -4,
            BmpError::Compressed(_) => -5,
            BmpError::PaletteTooLarge(_) | BmpError::PaletteTruncated { .. } => -6,
            BmpError::Dimensions { .. }
            | BmpError::PixelRange { .. }
            | BmpError::PixelsShort { .. } => -7,
        }
    }
}

impl fmt::Display for BmpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BmpError::FileHeaderTruncated { len } => {
                write!(f, "the file has {len} bytes, fewer than the 14-byte BMP file header")
            }
            BmpError::ReservedNotZero => {
                write!(f, "the reserved fields of the BMP file header are not 0")
            }
            BmpError::InfoHeaderTruncated { len } => write!(
                f,
                "the file has {len} bytes, too few for the 40-byte BMP info header"
            ),
            BmpError::InfoHeader { size, planes } => write!(
                f,
                "the BMP info header has size {size} and {planes} planes (expected 40 and 1)"
            ),
            BmpError::BitCount(b) => write!(f, "the image has {b} bits per pixel, not 8"),
            BmpError::Compressed(c) => write!(f, "the image is compressed (compression {c})"),
            BmpError::PaletteTooLarge(n) => {
                write!(f, "the palette has {n} colours, more than 256")
            }
            BmpError::PaletteTruncated { entries, available } => write!(
                f,
                "the palette of {entries} colours needs {} bytes, the file has {available} after the headers",
                u64::from(*entries) * 4
            ),
            BmpError::Dimensions { width, height } => {
                write!(f, "the image is {width}×{height} pixels")
            }
            BmpError::PixelRange { size, start, len } => write!(
                f,
                "the file header gives a size of {size} bytes, but the pixels start at byte {start} and the file has {len}"
            ),
            BmpError::PixelsShort { need, have } => write!(
                f,
                "the image needs {need} bytes of pixels, the file gives {have}"
            ),
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

/// Images larger than this on a side are refused (GoldSrc cannot use them anyway, and it
/// bounds the memory a bad header can ask for).
const MAX_SIDE: i32 = 65_535;

/// Reads an 8-bit uncompressed BMP the way Valve's HL1 studiomdl does.
pub fn read_bmp(bytes: &[u8]) -> Result<Image, BmpError> {
    if bytes.len() < 14 {
        return Err(BmpError::FileHeaderTruncated { len: bytes.len() });
    }
    let bf_size = u32_at(bytes, 2).unwrap_or(0);
    let r1 = u16_at(bytes, 6).unwrap_or(1);
    let r2 = u16_at(bytes, 8).unwrap_or(1);
    if r1 != 0 || r2 != 0 {
        return Err(BmpError::ReservedNotZero);
    }
    if bytes.len() < 54 {
        return Err(BmpError::InfoHeaderTruncated { len: bytes.len() });
    }
    let bi_size = u32_at(bytes, 14).unwrap_or(0);
    let width = u32_at(bytes, 18).unwrap_or(0) as i32;
    let height = u32_at(bytes, 22).unwrap_or(0) as i32;
    let planes = u16_at(bytes, 26).unwrap_or(0);
    let bits = u16_at(bytes, 28).unwrap_or(0);
    let compression = u32_at(bytes, 30).unwrap_or(0);
    let clr_used = u32_at(bytes, 46).unwrap_or(0);
    if bi_size != 40 || planes != 1 {
        return Err(BmpError::InfoHeader {
            size: bi_size,
            planes,
        });
    }
    if bits != 8 {
        return Err(BmpError::BitCount(bits));
    }
    if compression != 0 {
        return Err(BmpError::Compressed(compression));
    }
    let entries = if clr_used == 0 { 256 } else { clr_used };
    if entries > 256 {
        return Err(BmpError::PaletteTooLarge(entries));
    }
    let pal_bytes = entries as usize * 4;
    let pal = bytes
        .get(54..54 + pal_bytes)
        .ok_or(BmpError::PaletteTruncated {
            entries,
            available: bytes.len() - 54,
        })?;
    let mut palette = vec![0u8; 768];
    for (i, e) in pal.chunks_exact(4).enumerate() {
        if let (Some(dst), [b, g, r, _]) = (palette.get_mut(i * 3..i * 3 + 3), e) {
            dst.copy_from_slice(&[*r, *g, *b]);
        }
    }
    if width <= 0 || height <= 0 || width > MAX_SIDE || height > MAX_SIDE {
        return Err(BmpError::Dimensions { width, height });
    }
    let start = 54 + pal_bytes;
    let end = bf_size as usize;
    let data = if end > start {
        bytes.get(start..end)
    } else {
        None
    }
    .ok_or(BmpError::PixelRange {
        size: bf_size,
        start,
        len: bytes.len(),
    })?;
    let (w, h) = (width as usize, height as usize);
    let stride = (w + 3) & !3;
    let need = stride * h;
    if data.len() < need {
        return Err(BmpError::PixelsShort {
            need,
            have: data.len(),
        });
    }
    let mut pixels = Vec::with_capacity(need);
    for row in (0..h).rev() {
        if let Some(r) = data.get(row * stride..(row + 1) * stride) {
            pixels.extend_from_slice(r);
        }
    }
    Ok(Image {
        width: w,
        height: h,
        pixels,
        palette,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BMP as Valve's tools write it: `width`×`height`, rows bottom-up, 256-colour palette.
    fn make(width: u32, height: u32, rows_top_down: &[&[u8]], clr_used: u32) -> Vec<u8> {
        let stride = ((width + 3) & !3) as usize;
        let entries = if clr_used == 0 { 256 } else { clr_used };
        let size = 54 + entries as usize * 4 + stride * height as usize;
        let mut b = Vec::new();
        b.extend_from_slice(b"BM");
        b.extend_from_slice(&(size as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&(54 + entries * 4).to_le_bytes());
        b.extend_from_slice(&40u32.to_le_bytes());
        b.extend_from_slice(&width.to_le_bytes());
        b.extend_from_slice(&height.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&clr_used.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        for i in 0..entries {
            b.extend_from_slice(&[i as u8, 1, 2, 0]);
        }
        for row in rows_top_down.iter().rev() {
            let mut r = row.to_vec();
            r.resize(stride, 0xEE);
            b.extend_from_slice(&r);
        }
        b
    }

    #[test]
    fn reads_rows_top_down_and_palette_as_rgb() {
        let b = make(3, 2, &[&[1, 2, 3], &[4, 5, 6]], 0);
        let img = read_bmp(&b).unwrap();
        assert_eq!((img.width, img.height, img.stride()), (3, 2, 4));
        assert_eq!(img.at(0, 0), Some(1));
        assert_eq!(img.at(2, 1), Some(6));
        assert_eq!(img.at(3, 1), None);
        // BGRx (i, 1, 2) becomes RGB (2, 1, i).
        assert_eq!(&img.palette[..6], &[2, 1, 0, 2, 1, 1]);
    }

    #[test]
    fn short_palette_is_black_after_its_entries() {
        let b = make(4, 1, &[&[0, 1, 2, 3]], 2);
        let img = read_bmp(&b).unwrap();
        assert_eq!(&img.palette[..6], &[2, 1, 0, 2, 1, 1]);
        assert!(img.palette[6..].iter().all(|&c| c == 0));
    }

    #[test]
    fn pixels_start_after_the_palette_whatever_bf_off_bits_says() {
        let mut b = make(4, 1, &[&[9, 8, 7, 6]], 0);
        // A wrong bfOffBits is ignored, as in Valve's reader.
        b[10..14].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(read_bmp(&b).unwrap().pixels, vec![9, 8, 7, 6]);
    }

    #[test]
    fn each_failure_has_valves_code() {
        let good = make(4, 1, &[&[0; 4]], 0);
        let mut reserved = good.clone();
        reserved[6] = 1;
        let mut info = good.clone();
        info[14] = 12;
        let mut bits = good.clone();
        bits[28] = 24;
        let mut rle = good.clone();
        rle[30] = 1;
        let mut size = good.clone();
        size[2..6].copy_from_slice(&60u32.to_le_bytes());
        let cases: Vec<(&[u8], i32)> = vec![
            (&good[..10], -2),
            (&reserved, -2000),
            (&good[..40], -3),
            (&info, -3000),
            (&bits, -4),
            (&rle, -5),
            (&good[..100], -6),
            (&size, -7),
            (&good[..good.len() - 1], -7),
        ];
        for (bytes, code) in cases {
            let e = read_bmp(bytes).unwrap_err();
            assert_eq!(e.valve_code(), code, "{e}");
        }
    }
}
