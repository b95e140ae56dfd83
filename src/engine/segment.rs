//! Cutting streamed text into Discord messages (SPEC C4): at paragraph breaks as they complete,
//! and a paragraph longer than the limit at a line break, else a sentence end, else white space,
//! else a hard cut at a grapheme boundary. A cut never lands inside a URL or a Markdown span
//! (inline code, a link, emphasis, a spoiler) unless the span alone is longer than half a
//! message; a cut inside a code block closes it and reopens it, with its language tag and nothing
//! else, in the next message. Pure logic: the caller sends what comes out.
//!
//! The cutter always ends: every cut consumes at least half a message of input, the fence line
//! put in front of a continued code block is never fed back into the input, and the text a cut
//! looks at is a window of one message plus a short look-ahead, so the work is linear in the
//! input. What comes out, with the inserted fence lines taken away, is the input in order; only
//! white space at a cut (and blank lines between paragraphs) is left out. Indentation after a cut
//! is kept, so code arrives byte for byte.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use unicode_segmentation::UnicodeSegmentation;

use self::pacing::Pacer;
pub use self::pacing::{FULL, Pacing};

mod pacing;

/// Discord's message length limit, in characters.
pub const DISCORD_LIMIT: usize = 2000;

/// Discord opens and closes a code block at every three backticks, even inside a line.
const FENCE: &str = "```";
/// The longest language tag a reopened block carries; a longer info string is not repeated.
const MAX_TAG: usize = 20;
/// What a cut inside a code block appends: a line break and the closing backticks.
const CLOSE: &str = "\n```";
/// How far past the cut budget a protected span is looked for, in characters.
const LOOKAHEAD: usize = 256;

static PROTECTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)
        https?://\S+
        | `[^`\n]+`
        | \[[^\]\n]*\]\([^)\n]*\)
        | \*\*[^*\n]+\*\*
        | \*[^*\s][^*\n]*\*
        | __[^_\n]+__
        | ~~[^~\n]+~~
        | \|\|[^|\n]+\|\|
        ",
    )
    .unwrap_or_else(|e| unreachable!("static regex: {e}"))
});

/// One message: a slice of the input, with the fence lines a cut inserted around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    /// The language tag of a code block continued from the previous message (`Some("")` for a
    /// block without one): the message starts with "```tag\n".
    pub reopen: Option<String>,
    /// Input text, unchanged.
    pub body: String,
    /// The message ends inside a code block, so it is closed with "\n```".
    pub close: bool,
}

impl Piece {
    pub(crate) fn into_message(self) -> String {
        let mut message = String::with_capacity(self.body.len() + 32);
        if let Some(tag) = &self.reopen {
            message.push_str(FENCE);
            message.push_str(tag);
            message.push('\n');
        }
        message.push_str(&self.body);
        if self.close {
            message.push_str(CLOSE);
        }
        message
    }
}

/// Accumulates streamed text and hands out complete messages.
#[derive(Debug)]
pub struct Segmenter {
    buf: String,
    /// Characters in `buf`.
    buf_chars: usize,
    limit: usize,
    /// The code block open at the start of `buf`, cut from the previous message: its tag.
    fence: Option<String>,
    /// How far `buf` has been searched for a paragraph break.
    scan: LineScan,
    /// When the messages cut go out, and how many (SPEC C4).
    pacer: Pacer,
}

impl Default for Segmenter {
    fn default() -> Self {
        Self::new(DISCORD_LIMIT)
    }
}

impl Segmenter {
    /// `limit` is in characters; it must leave room for fence lines (at least 64). Every
    /// paragraph goes out as it completes ([`Pacing::UNPACED`]).
    pub fn new(limit: usize) -> Self {
        Self::paced(limit, Pacing::UNPACED)
    }

    /// A cutter for one reply, paced by `pacing` (SPEC C4).
    pub fn paced(limit: usize, pacing: Pacing) -> Self {
        let limit = limit.max(64);
        Self {
            buf: String::new(),
            buf_chars: 0,
            limit,
            fence: None,
            scan: LineScan::at(0, false),
            pacer: Pacer::new(limit, pacing),
        }
    }

    /// Complete text waits to go out with what comes next (see [`Self::pause`]).
    pub fn holding(&self) -> bool {
        self.pacer.holding()
    }

    /// The stream paused: complete text that waits goes out, while the reply's spare messages
    /// last.
    pub fn pause(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        self.pacer.pause(&mut out);
        out
    }

    /// How many cut pieces the pacer has taken: where a pause happens (see
    /// [`Self::replay_pauses`]).
    pub fn pieces_taken(&self) -> u32 {
        self.pacer.taken()
    }

    /// An earlier run of this reply paused after these counts of pieces taken: pause at the
    /// same places, so the messages are cut as they were (a turn resumed after a restart).
    pub fn replay_pauses(&mut self, pauses: Vec<u32>) {
        self.pacer.replay(pauses);
    }

    /// The cut pieces, paced.
    fn paced_out(&mut self, pieces: Vec<Piece>, end: bool) -> Vec<String> {
        let mut out = Vec::new();
        for piece in pieces {
            self.pacer.take(piece, &mut out);
        }
        if end {
            self.pacer.flush(&mut out);
        }
        out
    }

    /// The text not yet handed out.
    pub fn pending(&self) -> &str {
        &self.buf
    }

    /// The message being written, as far as it came: what waits to go out with what comes
    /// next and the text not yet cut, within the limit (an interaction's answer shows it).
    pub fn draft(&self) -> String {
        let held = self.pacer.held();
        let text = match (held.trim().is_empty(), self.buf.trim().is_empty()) {
            (true, _) => self.buf.clone(),
            (false, true) => held.to_owned(),
            (false, false) => format!("{held}\n\n{}", self.buf),
        };
        text.chars().take(self.limit).collect()
    }

    /// Adds streamed text; returns the messages to send now.
    pub fn push(&mut self, text: &str) -> Vec<String> {
        let pieces = self.push_pieces(text);
        self.paced_out(pieces, false)
    }

    pub(crate) fn push_pieces(&mut self, text: &str) -> Vec<Piece> {
        self.buf.push_str(text);
        self.buf_chars += text.chars().count();
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            if let Some((end, next)) = self.scan.next_break(&self.buf) {
                let paragraph = self.buf.get(start..end).unwrap_or_default();
                cut_into(
                    paragraph,
                    &mut self.fence,
                    self.limit,
                    self.limit / 2,
                    &mut out,
                );
                start = self.consume(start, next);
                continue;
            }
            let rest = self.buf.get(start..).unwrap_or_default();
            if prefix_len(self.fence.as_deref()) + self.buf_chars <= self.limit {
                break;
            }
            let Some(cut) = next_cut(rest, self.fence.as_deref(), self.limit, self.limit / 2)
            else {
                break;
            };
            out.extend(cut.piece);
            self.fence = cut.fence;
            start = self.consume(start, start + cut.next);
        }
        self.buf.drain(..start);
        self.scan.pos -= start;
        out
    }

    /// Marks `buf[start..next]` as handed out; returns `next`.
    fn consume(&mut self, start: usize, next: usize) -> usize {
        let consumed = self.buf.get(start..next).unwrap_or_default();
        self.buf_chars -= consumed.chars().count();
        self.scan = LineScan::at(next, self.fence.is_some());
        next
    }

    /// The end of a pass: everything left, cut to the limit.
    pub fn finish(&mut self) -> Vec<String> {
        let rest = std::mem::take(&mut self.buf);
        let pieces = self.emit_rest(&rest);
        self.paced_out(pieces, true)
    }

    /// A user stop: what waits, and the complete sentences of what is pending; a partial
    /// sentence is dropped.
    pub fn finish_complete_sentences(&mut self) -> Vec<String> {
        let rest = std::mem::take(&mut self.buf);
        let end = sentence_ends(&rest).last().copied().unwrap_or(0);
        let pieces = self.emit_rest(rest.get(..end).unwrap_or_default());
        self.paced_out(pieces, true)
    }

    /// A follow-up interrupt or a failed stream: the pending text is thrown away. Complete
    /// paragraphs that waited are returned, to go out as they would have.
    #[must_use]
    pub fn discard(&mut self) -> Vec<String> {
        self.reset();
        self.paced_out(Vec::new(), true)
    }

    /// Cuts `rest` (taken out of the buffer) into pieces and starts afresh.
    pub(crate) fn emit_rest(&mut self, rest: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        cut_into(rest, &mut self.fence, self.limit, self.limit / 2, &mut out);
        self.reset();
        out
    }

    /// Starts afresh; every caller has emptied the buffer.
    fn reset(&mut self) {
        self.buf.clear();
        self.buf_chars = 0;
        self.fence = None;
        self.scan = LineScan::at(0, false);
    }
}

/// The search for a paragraph break (a blank line outside a code block, after some content),
/// resumed where the last search stopped: only complete lines are read.
#[derive(Debug)]
struct LineScan {
    pos: usize,
    in_fence: bool,
    seen_content: bool,
}

impl LineScan {
    fn at(pos: usize, in_fence: bool) -> Self {
        Self {
            pos,
            in_fence,
            seen_content: false,
        }
    }

    /// The next break in `text` from `self.pos`: (end of the paragraph, start of the next, past
    /// any further blank lines already here).
    fn next_break(&mut self, text: &str) -> Option<(usize, usize)> {
        let unread = text.get(self.pos..)?;
        let mut lines = unread.split_inclusive('\n').peekable();
        while let Some(line) = lines.next() {
            if !line.ends_with('\n') {
                return None;
            }
            let blank = line.trim().is_empty();
            if blank && !self.in_fence && self.seen_content {
                let end = self.pos;
                let mut next = self.pos + line.len();
                while let Some(more) = lines.next_if(|l| l.ends_with('\n') && l.trim().is_empty()) {
                    next += more.len();
                }
                return Some((end, next));
            }
            self.in_fence ^= line.matches(FENCE).count() % 2 == 1;
            self.seen_content |= !blank;
            self.pos += line.len();
        }
        None
    }
}

/// Characters a reopened block puts in front of a message.
fn prefix_len(fence: Option<&str>) -> usize {
    fence.map_or(0, |tag| FENCE.len() + tag.chars().count() + 1)
}

/// Cuts one paragraph (or the rest of a pass) into pieces, carrying the open code block. A cut
/// lands at a boundary at least `min` characters in when one is there.
fn cut_into(
    mut text: &str,
    fence: &mut Option<String>,
    limit: usize,
    min: usize,
    out: &mut Vec<Piece>,
) {
    while let Some(cut) = next_cut(text, fence.as_deref(), limit, min) {
        out.extend(cut.piece);
        *fence = cut.fence;
        text = text.get(cut.next..).unwrap_or_default();
    }
    let carried = fence.take();
    *fence = open_block(text, carried.as_deref());
    out.extend(piece(carried, text, false));
}

/// One cut: the piece before it (none when only white space), where the rest starts, and the
/// code block open at the cut.
struct Cut {
    piece: Option<Piece>,
    next: usize,
    fence: Option<String>,
}

/// The first cut of `text`, or `None` when it fits in one message.
fn next_cut(text: &str, fence: Option<&str>, limit: usize, min: usize) -> Option<Cut> {
    let prefix = prefix_len(fence);
    if prefix + text.chars().take(limit + 1).count() <= limit {
        return None;
    }
    let budget = limit - prefix - CLOSE.len();
    let (end, next) = choose_cut(text, budget, min.min(budget));
    let head = text.get(..end).unwrap_or_default();
    let open = open_block(head, fence);
    let body = if open.is_some() {
        head
    } else {
        head.trim_end()
    };
    Some(Cut {
        piece: piece(fence.map(str::to_owned), body, open.is_some()),
        next,
        fence: open,
    })
}

fn piece(reopen: Option<String>, body: &str, close: bool) -> Option<Piece> {
    let body = if reopen.is_some() {
        body
    } else {
        body.trim_start_matches(['\n', '\r'])
    };
    let body = if close { body } else { body.trim_end() };
    if body.trim().is_empty() {
        return None;
    }
    Some(Piece {
        reopen,
        body: body.to_owned(),
        close,
    })
}

/// The code block open at the end of `text` when `fence` was open at its start: its tag.
fn open_block(text: &str, fence: Option<&str>) -> Option<String> {
    let mut open = fence.map(str::to_owned);
    for (at, _) in text.match_indices(FENCE) {
        open = match open {
            Some(_) => None,
            None => Some(language_tag(
                text.get(at + FENCE.len()..).unwrap_or_default(),
            )),
        };
    }
    open
}

/// The language tag right after an opening fence: a short word ending the line, else nothing.
fn language_tag(after: &str) -> String {
    let len = after
        .find(|c: char| !(c.is_ascii_alphanumeric() || "_+-.#".contains(c)))
        .unwrap_or(after.len());
    let tag = after.get(..len).unwrap_or_default();
    let ends_line = after.get(len..).is_some_and(|rest| rest.starts_with('\n'));
    if ends_line && len <= MAX_TAG {
        tag.to_owned()
    } else {
        String::new()
    }
}

/// Where to cut `text` (longer than `budget` characters): (end of the piece, start of the
/// rest). The piece is at most `budget` characters and, when any boundary allows it, at least
/// `min` characters.
fn choose_cut(text: &str, budget: usize, min: usize) -> (usize, usize) {
    let budget_at = byte_at_char(text, budget);
    let min_at = byte_at_char(text, min.min(budget));
    let window = text
        .get(..byte_at_char(text, budget + LOOKAHEAD))
        .unwrap_or(text);
    let spans = protected_spans(window);
    let allowed = |p: usize| p >= min_at && p <= budget_at && p > 0;
    let head = window.get(..budget_at).unwrap_or_default();
    if let Some(p) = head.rfind('\n').filter(|&p| allowed(p)) {
        return (p, p + 1);
    }
    if let Some(p) = sentence_ends(window).into_iter().rfind(|&p| allowed(p)) {
        return (p, skip_blanks(text, p));
    }
    let space = head
        .char_indices()
        .rfind(|&(i, c)| c.is_whitespace() && allowed(i) && !inside(&spans, i));
    if let Some((p, _)) = space {
        return (p, skip_blanks(text, p));
    }
    let p = hard_cut(window, budget_at, min_at, &spans);
    (p, p)
}

/// A cut with no boundary: moved back to the start of a span it would split, then to a grapheme
/// boundary, never before `min_at` (or 0).
fn hard_cut(window: &str, budget_at: usize, min_at: usize, spans: &[Range<usize>]) -> usize {
    let floor = min_at.max(1);
    let mut p = spans
        .iter()
        .find(|s| s.start < budget_at && budget_at < s.end && s.start >= floor)
        .map_or(budget_at, |s| s.start);
    let run_start = window
        .get(..p)
        .map_or(p, |before| before.trim_end_matches('`').len());
    if window.get(p..).is_some_and(|after| after.starts_with('`')) && run_start >= floor {
        p = run_start;
    }
    let grapheme = window
        .get(..window.len().min(p + 64))
        .unwrap_or(window)
        .grapheme_indices(true)
        .map(|(i, _)| i)
        .rfind(|&i| i <= p);
    match grapheme {
        Some(g) if g >= floor => g,
        _ => p,
    }
}

/// Past the spaces and tabs at a cut, and one line break.
fn skip_blanks(text: &str, at: usize) -> usize {
    let rest = text.get(at..).unwrap_or_default();
    let spaces = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    let after = rest.get(spaces..).unwrap_or_default();
    at + spaces + usize::from(after.starts_with('\n'))
}

/// Byte offsets just after each sentence end (`. ! ?` and their CJK forms followed by white
/// space or the end, and every line break), outside protected spans.
fn sentence_ends(text: &str) -> Vec<usize> {
    let spans = protected_spans(text);
    let mut ends = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let after = i + c.len_utf8();
        let is_end = match c {
            '\n' => true,
            '。' | '！' | '？' => true,
            '.' | '!' | '?' => chars.peek().is_none_or(|(_, n)| n.is_whitespace()),
            _ => false,
        };
        if is_end && !inside(&spans, after) {
            ends.push(after);
        }
    }
    ends
}

fn protected_spans(text: &str) -> Vec<Range<usize>> {
    PROTECTED.find_iter(text).map(|m| m.range()).collect()
}

fn inside(spans: &[Range<usize>], at: usize) -> bool {
    spans.iter().any(|s| s.start < at && at < s.end)
}

/// The byte index of the `n`th character (or the end).
fn byte_at_char(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests;
