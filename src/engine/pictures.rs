//! Pictures for a model that sees: what a file's bytes are (png, jpeg and webp go as they are; a
//! gif goes as its first frame in png, since many models refuse gifs), within bounds a crafted
//! file cannot talk its way past. A gif's screen and each frame it would draw are checked
//! before a pixel is decoded, the decoder's own buffers are capped, the work runs off the
//! runtime's threads, and a picture converted once is kept (bounded) for the next turns that
//! show it.

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU64;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;

use crate::domain::ports::ImagePart;

/// Largest picture, in pixels, a gif's screen or first frame may take (2048 x 2048, 16 MB to
/// draw): a gif's header may claim 65535 x 65535 (17 GB), and a frame may be larger than the
/// screen it says it is drawn on.
pub const GIF_MAX_PIXELS: u64 = 2048 * 2048;

/// What a file's bytes are, as a picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Picture {
    Shown(ImagePart),
    /// A picture larger than a model is shown.
    TooLarge,
    /// No png, jpeg, webp or gif, or one that does not decode.
    NotAPicture,
}

/// The picture in `bytes`, as [`Picture`]. Decoding a gif is work for a blocking thread: see
/// [`Pictures::convert`].
pub fn image_part(bytes: &[u8]) -> Picture {
    let (mime, converted) = match bytes {
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, ..] => ("image/png", None),
        [0xff, 0xd8, 0xff, ..] => ("image/jpeg", None),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => ("image/webp", None),
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => match gif_first_frame_png(bytes) {
            Ok(png) => ("image/png", Some(png)),
            Err(unfit) => return unfit,
        },
        _ => return Picture::NotAPicture,
    };
    let data =
        base64::engine::general_purpose::STANDARD.encode(converted.as_deref().unwrap_or(bytes));
    Picture::Shown(ImagePart {
        data_url: Arc::from(format!("data:{mime};base64,{data}")),
    })
}

/// Whether `width` x `height` pixels may be drawn.
fn fits(width: u16, height: u16) -> bool {
    u64::from(width) * u64::from(height) <= GIF_MAX_PIXELS
}

/// A gif's first frame drawn on its screen (transparent around it), encoded as png. The screen
/// and the frame are both checked before the frame is decoded.
fn gif_first_frame_png(bytes: &[u8]) -> Result<Vec<u8>, Picture> {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    // The decoder's own bound on what one frame may allocate, beside the checks below.
    if let Some(limit) = NonZeroU64::new(GIF_MAX_PIXELS * 4) {
        options.set_memory_limit(gif::MemoryLimit::Bytes(limit));
    }
    let mut decoder = options.read_info(bytes).map_err(|_| Picture::NotAPicture)?;
    let (width, height) = (decoder.width(), decoder.height());
    if width == 0 || height == 0 {
        return Err(Picture::NotAPicture);
    }
    if !fits(width, height) {
        return Err(Picture::TooLarge);
    }
    let frame = decoder
        .next_frame_info()
        .map_err(|_| Picture::NotAPicture)?
        .ok_or(Picture::NotAPicture)?;
    if !fits(frame.width, frame.height) {
        return Err(Picture::TooLarge);
    }
    let placed = Placed {
        left: usize::from(frame.left),
        top: usize::from(frame.top),
        width: usize::from(frame.width),
    };
    let mut pixels = vec![0u8; decoder.buffer_size()];
    decoder
        .read_into_buffer(&mut pixels)
        .map_err(|_| Picture::NotAPicture)?;
    let canvas = draw(&pixels, placed, usize::from(width), usize::from(height));
    encode_png(&canvas, u32::from(width), u32::from(height)).ok_or(Picture::NotAPicture)
}

/// Where a frame lies on its screen.
#[derive(Debug, Clone, Copy)]
struct Placed {
    left: usize,
    top: usize,
    width: usize,
}

/// The frame's RGBA `pixels` drawn on a transparent screen of `width` x `height`; what lies
/// outside the screen is cut off.
fn draw(pixels: &[u8], at: Placed, width: usize, height: usize) -> Vec<u8> {
    let mut canvas = vec![0u8; width * height * 4];
    let drawn = at.width.min(width.saturating_sub(at.left));
    for (row, line) in pixels.chunks(at.width.max(1) * 4).enumerate() {
        let y = at.top + row;
        if y >= height {
            break;
        }
        let start = (y * width + at.left) * 4;
        let (Some(to), Some(from)) = (
            canvas.get_mut(start..start + drawn * 4),
            line.get(..drawn * 4),
        ) else {
            continue;
        };
        to.copy_from_slice(from);
    }
    canvas
}

fn encode_png(canvas: &[u8], width: u32, height: u32) -> Option<Vec<u8>> {
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, width, height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().ok()?;
    writer.write_image_data(canvas).ok()?;
    writer.finish().ok()?;
    Some(png_bytes)
}

/// Pictures already looked at, by where they were downloaded from (the address without its
/// query, which Discord re-signs): the next turn showing the same message's picture neither
/// downloads nor converts it again. Bounded in entries and in bytes kept; the oldest go first.
#[derive(Default)]
pub struct Pictures {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    by_key: HashMap<String, Picture>,
    order: VecDeque<String>,
    bytes: usize,
}

/// At most this many pictures are kept.
const KEPT_PICTURES: usize = 256;
/// At most this many bytes of pictures (as data URLs) are kept.
const KEPT_BYTES: usize = 64 * 1024 * 1024;

impl std::fmt::Debug for Pictures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pictures").finish_non_exhaustive()
    }
}

/// The key of a download: its address without the query (a signature that changes).
fn key_of(url: &str) -> String {
    url.split(['?', '#']).next().unwrap_or(url).to_owned()
}

fn size_of(picture: &Picture) -> usize {
    match picture {
        Picture::Shown(part) => part.data_url.len(),
        Picture::TooLarge | Picture::NotAPicture => 0,
    }
}

impl Pictures {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The picture downloaded from `url` before, if it is kept.
    pub fn get(&self, url: &str) -> Option<Picture> {
        self.kept().by_key.get(&key_of(url)).cloned()
    }

    /// What `bytes` (downloaded from `url`) are as a picture, worked out on a blocking thread,
    /// and kept for the next turns.
    pub async fn convert(&self, url: &str, bytes: Vec<u8>) -> Picture {
        let picture = tokio::task::spawn_blocking(move || image_part(&bytes))
            .await
            .unwrap_or_else(|error| {
                tracing::error!(%error, "converting a picture failed; it is not shown");
                Picture::NotAPicture
            });
        self.keep(key_of(url), picture.clone());
        picture
    }

    fn keep(&self, key: String, picture: Picture) {
        let size = size_of(&picture);
        if size > KEPT_BYTES {
            return;
        }
        let mut kept = self.kept();
        if let Some(old) = kept.by_key.remove(&key) {
            kept.bytes = kept.bytes.saturating_sub(size_of(&old));
            kept.order.retain(|k| *k != key);
        }
        while kept.order.len() >= KEPT_PICTURES || kept.bytes + size > KEPT_BYTES {
            let Some(oldest) = kept.order.pop_front() else {
                break;
            };
            if let Some(gone) = kept.by_key.remove(&oldest) {
                kept.bytes = kept.bytes.saturating_sub(size_of(&gone));
            }
        }
        kept.bytes += size;
        kept.order.push_back(key.clone());
        kept.by_key.insert(key, picture);
    }

    /// How many pictures are kept (for tests).
    pub fn len(&self) -> usize {
        self.kept().by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n rest of a png";

    fn shown(picture: Picture) -> ImagePart {
        match picture {
            Picture::Shown(part) => part,
            other => panic!("not shown: {other:?}"),
        }
    }

    fn decoded(part: &ImagePart) -> (String, Vec<u8>) {
        let (head, data) = part.data_url.split_once(";base64,").unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        (head.trim_start_matches("data:").to_owned(), bytes)
    }

    /// A 4 x 3 gif whose first frame is a 2 x 2 blue square at (1, 1), then an all-red frame.
    fn two_frame_gif() -> Vec<u8> {
        let mut out = Vec::new();
        {
            let palette = [255, 0, 0, 0, 0, 255];
            let mut encoder = gif::Encoder::new(&mut out, 4, 3, &palette).unwrap();
            let blue = gif::Frame {
                left: 1,
                top: 1,
                width: 2,
                height: 2,
                buffer: Cow::Borrowed(&[1, 1, 1, 1]),
                ..gif::Frame::default()
            };
            encoder.write_frame(&blue).unwrap();
            let red = gif::Frame {
                width: 4,
                height: 3,
                buffer: Cow::Borrowed(&[0; 12]),
                ..gif::Frame::default()
            };
            encoder.write_frame(&red).unwrap();
        }
        out
    }

    // What a picture is comes from its bytes; a gif becomes its first frame.
    #[test]
    fn pictures_are_known_by_their_bytes_and_a_gif_by_its_first_frame() {
        let (mime, bytes) = decoded(&shown(image_part(PNG)));
        assert_eq!((mime.as_str(), bytes.as_slice()), ("image/png", PNG));
        let jpeg = shown(image_part(&[0xff, 0xd8, 0xff, 0xe0, 0]));
        assert!(jpeg.data_url.starts_with("data:image/jpeg;base64,"));
        let webp = shown(image_part(b"RIFF\x10\0\0\0WEBPVP8 "));
        assert!(webp.data_url.starts_with("data:image/webp;base64,"));
        assert_eq!(
            image_part(b"<html>not a picture</html>"),
            Picture::NotAPicture
        );
        assert_eq!(image_part(b"GIF89a broken"), Picture::NotAPicture);

        let (mime, png_bytes) = decoded(&shown(image_part(&two_frame_gif())));
        assert_eq!(mime, "image/png");
        let mut reader = png::Decoder::new(std::io::Cursor::new(png_bytes))
            .read_info()
            .unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!((info.width, info.height), (4, 3));
        let at = |x: usize, y: usize| pixels[(y * 4 + x) * 4..(y * 4 + x) * 4 + 4].to_vec();
        assert_eq!(
            at(1, 1),
            [0, 0, 255, 255],
            "the first frame, drawn where it lies"
        );
        assert_eq!(at(2, 2), [0, 0, 255, 255]);
        assert_eq!(
            at(0, 0),
            [0, 0, 0, 0],
            "the canvas around it is transparent"
        );
    }

    // A gif claiming a canvas too large to draw is refused, not drawn.
    #[test]
    fn a_gif_too_large_to_draw_is_too_large() {
        let mut gif = two_frame_gif();
        gif[6..10].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]); // 65535 x 65535
        assert_eq!(image_part(&gif), Picture::TooLarge);
    }

    // SPEC D7: a 1 x 1 screen whose first frame is 3500 x 3500 (a 9 KB file that would take 49 MB
    // to decode) is named too large; its pixels are never decoded.
    #[test]
    fn a_first_frame_larger_than_its_screen_is_too_large() {
        let mut out = Vec::new();
        {
            let mut encoder = gif::Encoder::new(&mut out, 1, 1, &[0, 0, 0, 255, 255, 255]).unwrap();
            let big = gif::Frame {
                width: 3500,
                height: 3500,
                buffer: Cow::Owned(vec![0; 3500 * 3500]),
                ..gif::Frame::default()
            };
            encoder.write_frame(&big).unwrap();
        }
        assert!(out.len() < 64 * 1024, "a small file: {} bytes", out.len());
        assert_eq!(image_part(&out), Picture::TooLarge);
    }

    // SPEC D7: a picture looked at once is kept: the next turn neither downloads nor converts it
    // again, whatever signature its address carries now.
    #[tokio::test]
    async fn a_converted_picture_is_kept_for_the_next_turn() {
        let pictures = Pictures::default();
        let url = "https://cdn.discordapp.com/attachments/1/2/a.gif?ex=1&hm=2";
        assert_eq!(pictures.get(url), None);
        let first = pictures.convert(url, two_frame_gif()).await;
        assert!(matches!(first, Picture::Shown(_)));
        let again = "https://cdn.discordapp.com/attachments/1/2/a.gif?ex=3&hm=4";
        assert_eq!(pictures.get(again), Some(first));
        assert_eq!(
            pictures.get("https://cdn.discordapp.com/attachments/1/2/b.gif"),
            None
        );
    }

    // The kept pictures stay within their count, the oldest going first.
    #[tokio::test]
    async fn kept_pictures_are_bounded() {
        let pictures = Pictures::default();
        for i in 0..KEPT_PICTURES + 10 {
            pictures
                .convert(&format!("https://c/{i}.png"), PNG.to_vec())
                .await;
        }
        assert_eq!(pictures.len(), KEPT_PICTURES);
        assert_eq!(pictures.get("https://c/0.png"), None);
        assert!(
            pictures
                .get(&format!("https://c/{}.png", KEPT_PICTURES + 9))
                .is_some()
        );
    }
}
