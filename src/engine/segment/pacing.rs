//! How many messages a reply takes (SPEC C4). The cutter hands out messages as paragraphs
//! complete; the pacer decides when they go. A persona may speak in several messages, as a
//! person texting does, but only while they are few: a paragraph shorter than
//! `short_paragraph_chars` waits for the next and goes out with it (unless the stream pauses,
//! see [`Pacer::pause`]), and a message shorter than a full one ([`FULL`] characters) spends one
//! of the reply's `max_messages_per_reply` spare messages. With one left, the rest of the reply
//! is packed: messages are filled up to the limit, cut at paragraph, then sentence boundaries
//! near it, and only the last may be short. So a reply of `n` characters takes at most
//! `n / FULL + max_messages_per_reply` messages, whatever its paragraphs. The `compact` style
//! packs from the start.

use super::{CLOSE, DISCORD_LIMIT, Piece, cut_into};
use crate::config::ReplyStyle;

/// A message at least this long (in characters) is full: one per this many characters is what
/// a reply's length needs.
pub const FULL: usize = 1900;

/// How a reply is paced (from `turn.*` and the server's style).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    pub style: ReplyStyle,
    /// Messages shorter than [`FULL`] a reply may take (at least 1: its last).
    pub spare_messages: usize,
    /// A paragraph shorter than this waits for the next.
    pub short_paragraph_chars: usize,
}

impl Pacing {
    /// Every paragraph a message as it completes, with no bound: the cutter alone.
    pub const UNPACED: Self = Self {
        style: ReplyStyle::Paragraphs,
        spare_messages: usize::MAX,
        short_paragraph_chars: 0,
    };

    pub fn from_config(turn: &crate::config::TurnConfig, style: ReplyStyle) -> Self {
        Self {
            style,
            spare_messages: usize::try_from(turn.max_messages_per_reply)
                .unwrap_or(usize::MAX)
                .max(1),
            short_paragraph_chars: usize::try_from(turn.short_paragraph_chars).unwrap_or(0),
        }
    }
}

/// The pacer of one reply: what waits, and how many spare messages are left.
#[derive(Debug)]
pub(crate) struct Pacer {
    limit: usize,
    spare: usize,
    short: usize,
    /// Complete text that has not gone out yet: short paragraphs waiting for more, or (packed)
    /// the start of the next full message.
    held: String,
    /// `held` ends with the close of a code block a cut split: the next piece continues it.
    split_block: bool,
    packed: bool,
    /// Pieces taken from the cutter so far.
    taken: u32,
    /// Where an earlier run of this reply paused (after how many pieces taken), replayed so a
    /// resumed turn cuts as the earlier run did (see [`Pacer::replay`]).
    replay: std::collections::VecDeque<u32>,
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

impl Pacer {
    pub(crate) fn new(limit: usize, pacing: Pacing) -> Self {
        Self {
            limit,
            spare: pacing.spare_messages.max(1),
            short: pacing.short_paragraph_chars,
            held: String::new(),
            split_block: false,
            packed: pacing.style == ReplyStyle::Compact || pacing.spare_messages <= 1,
            taken: 0,
            replay: std::collections::VecDeque::new(),
        }
    }

    /// Pieces taken from the cutter so far: where a pause happens, for [`Pacer::replay`].
    pub(crate) fn taken(&self) -> u32 {
        self.taken
    }

    /// An earlier run of this reply paused after these counts of pieces taken: this run pauses
    /// at the same places, so its messages are cut the same way and a resumed turn can skip
    /// the ones already posted by count (SPEC D5).
    pub(crate) fn replay(&mut self, mut pauses: Vec<u32>) {
        pauses.sort_unstable();
        pauses.dedup();
        self.replay = pauses.into_iter().filter(|at| *at > self.taken).collect();
    }

    /// The shortest a full message is, for this limit.
    pub(crate) fn full(limit: usize) -> usize {
        FULL.min(limit * FULL / DISCORD_LIMIT)
    }

    /// The text waiting to go out with what comes next.
    pub(crate) fn held(&self) -> &str {
        &self.held
    }

    /// Text is waiting to go out with what comes next.
    pub(crate) fn holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// A complete message from the cutter: what goes out now is added to `out`.
    pub(crate) fn take(&mut self, piece: Piece, out: &mut Vec<String>) {
        self.taken = self.taken.saturating_add(1);
        self.place(piece, out);
        while let Some(&at) = self.replay.front() {
            if at > self.taken {
                break;
            }
            self.replay.pop_front();
            self.pause(out);
        }
    }

    /// [`Pacer::take`]'s placing of one piece: held, sent, or packed.
    fn place(&mut self, piece: Piece, out: &mut Vec<String>) {
        if self.packed {
            self.join(piece);
            self.pack(out);
            return;
        }
        let size = chars(&piece.body) + piece.reopen.as_ref().map_or(0, |t| t.len() + 4);
        if self.holding() && chars(&self.held) + 2 + size > self.limit {
            let held = self.take_held();
            self.emit(held, out);
            if self.packed {
                return self.place(piece, out);
            }
        }
        self.join(piece);
        if chars(&self.held) >= self.short {
            let held = self.take_held();
            self.emit(held, out);
        }
    }

    fn take_held(&mut self) -> String {
        self.split_block = false;
        std::mem::take(&mut self.held)
    }

    /// The stream paused: what waits goes out, while spare messages last.
    pub(crate) fn pause(&mut self, out: &mut Vec<String>) {
        if !self.packed && self.holding() {
            let held = self.take_held();
            self.emit(held, out);
        }
    }

    /// The end of the reply (or of what can be said of it): everything goes.
    pub(crate) fn flush(&mut self, out: &mut Vec<String>) {
        let held = self.take_held();
        if held.is_empty() {
            return;
        }
        if self.packed {
            let pieces = self.packed_pieces(&held);
            out.extend(pieces.into_iter().map(Piece::into_message));
        } else {
            self.emit(held, out);
        }
    }

    /// Adds a piece to what waits. A piece continuing a code block the cut split joins it
    /// as one block again (its close and reopen lines dropped).
    fn join(&mut self, piece: Piece) {
        if self.split_block && piece.reopen.is_some() && self.held.ends_with(CLOSE) {
            self.held.truncate(self.held.len() - CLOSE.len());
            self.held.push('\n');
            self.held.push_str(&piece.body);
            if piece.close {
                self.held.push_str(CLOSE);
            }
        } else {
            if self.holding() {
                self.held.push_str("\n\n");
            }
            self.split_block = false;
            let close = piece.close;
            self.held.push_str(&piece.into_message());
            self.split_block = close;
            return;
        }
        self.split_block = piece.close;
    }

    /// A message goes out; a short one spends a spare message, and with one left the rest of
    /// the reply is packed.
    fn emit(&mut self, message: String, out: &mut Vec<String>) {
        if chars(&message) < Self::full(self.limit) {
            self.spare = self.spare.saturating_sub(1);
        }
        out.push(message);
        if self.spare <= 1 {
            self.packed = true;
        }
    }

    /// `text` cut into full messages (the last may be short).
    fn packed_pieces(&self, text: &str) -> Vec<Piece> {
        let mut pieces = Vec::new();
        cut_into(
            text,
            &mut None,
            self.limit,
            Self::full(self.limit),
            &mut pieces,
        );
        pieces
    }

    /// Packed: full messages go out as soon as what is held fills one; the rest waits.
    fn pack(&mut self, out: &mut Vec<String>) {
        if chars(&self.held) <= self.limit {
            return;
        }
        let held = self.take_held();
        let mut pieces = self.packed_pieces(&held);
        let last = pieces.pop();
        out.extend(pieces.into_iter().map(Piece::into_message));
        if let Some(last) = last {
            self.split_block = last.close;
            self.held = last.into_message();
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::engine::segment::Segmenter;

    fn pacing(style: ReplyStyle) -> Pacing {
        Pacing {
            style,
            spare_messages: 4,
            short_paragraph_chars: 300,
        }
    }

    /// A reply streamed in `chunk`-byte pieces (at char boundaries), then finished.
    fn reply(text: &str, pacing: Pacing, chunk: usize) -> Vec<String> {
        let mut segmenter = Segmenter::paced(DISCORD_LIMIT, pacing);
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut at = chunk.min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            out.extend(segmenter.push(&rest[..at]));
            rest = &rest[at..];
        }
        out.extend(segmenter.finish());
        out
    }

    /// The bound of SPEC C4: one message per FULL characters, and the spare ones.
    fn bound(text: &str, spare: usize) -> usize {
        text.chars().count().div_ceil(FULL) + spare
    }

    fn words(text: &str) -> Vec<&str> {
        text.split_whitespace().collect()
    }

    // SPEC C4: a chatty reply of 300 one-line paragraphs (77 messages before) takes
    // at most ceil(len / 1900) + 4 messages, every word kept in order.
    #[test]
    fn three_hundred_short_paragraphs_take_a_few_messages() {
        let text = (0..300)
            .map(|i| format!("He loved them too, line {i}."))
            .collect::<Vec<_>>()
            .join("\n\n");
        for style in [ReplyStyle::Paragraphs, ReplyStyle::Compact] {
            let messages = reply(&text, pacing(style), 37);
            assert!(
                messages.len() <= bound(&text, 4),
                "{style:?}: {}",
                messages.len()
            );
            assert!(messages.iter().all(|m| m.chars().count() <= DISCORD_LIMIT));
            assert_eq!(words(&messages.join("\n\n")), words(&text));
        }
        let unpaced = reply(&text, Pacing::UNPACED, 37);
        assert_eq!(unpaced.len(), 300, "a message a paragraph without pacing");
    }

    // SPEC C4: three long paragraphs are three messages, as a person writes them.
    #[test]
    fn long_paragraphs_keep_a_message_each() {
        let paragraph = |c: char| format!("{} end.", c.to_string().repeat(700));
        let text = [paragraph('a'), paragraph('b'), paragraph('c')].join("\n\n");
        let messages = reply(&text, pacing(ReplyStyle::Paragraphs), 100);
        assert_eq!(messages.len(), 3, "{messages:?}");
    }

    // SPEC C4: short paragraphs travel together; a pause lets what waits go out.
    #[test]
    fn short_paragraphs_wait_for_the_next_unless_the_stream_pauses() {
        let mut segmenter = Segmenter::paced(DISCORD_LIMIT, pacing(ReplyStyle::Paragraphs));
        assert!(segmenter.push("Hi there.\n\n").is_empty());
        assert!(segmenter.holding());
        assert_eq!(segmenter.pause(), vec!["Hi there."]);
        assert!(segmenter.push("Second.\n\nThird.\n\n").is_empty());
        assert_eq!(segmenter.finish(), vec!["Second.\n\nThird."]);
    }

    // SPEC C4, D5: a run that replays an earlier run's pauses cuts its messages as that run did,
    // however its text arrives; without them the first message would swallow the second
    // paragraph, and a resumed turn skipping by count would lose it.
    #[test]
    fn replayed_pauses_cut_a_reply_as_the_paused_run_did() {
        let rest: Vec<String> = (0..30).map(|i| format!("Then line {i}.")).collect();
        let rest = rest.join("\n\n");
        let mut first = Segmenter::paced(DISCORD_LIMIT, pacing(ReplyStyle::Paragraphs));
        let mut cut = first.push("Hmm, let me think.\n\n");
        cut.extend(first.pause());
        let paused_after = first.pieces_taken();
        cut.extend(first.push(&rest));
        cut.extend(first.finish());

        let whole = format!("Hmm, let me think.\n\n{rest}");
        let mut again = Segmenter::paced(DISCORD_LIMIT, pacing(ReplyStyle::Paragraphs));
        again.replay_pauses(vec![paused_after]);
        let mut recut = again.push(&whole);
        recut.extend(again.finish());
        assert_eq!(recut, cut);
        assert_eq!(cut[0], "Hmm, let me think.");
        assert_ne!(reply(&whole, pacing(ReplyStyle::Paragraphs), 4096), cut);
    }

    // SPEC C4: a code block longer than a message, in a reply of many paragraphs, is still one
    // block per message, closed and reopened at a cut, with nothing lost.
    #[test]
    fn a_long_code_block_among_many_paragraphs_is_closed_and_reopened() {
        let code: String = (0..120).map(|i| format!("let x{i} = {i};\n")).collect();
        let chatter: Vec<String> = (0..40).map(|i| format!("Line {i}.")).collect();
        let text = format!(
            "{}\n\n```rust\n{code}```\n\n{}",
            chatter.join("\n\n"),
            chatter.join("\n\n")
        );
        let messages = reply(&text, pacing(ReplyStyle::Paragraphs), 64);
        assert!(messages.len() <= bound(&text, 4), "{}", messages.len());
        for m in &messages {
            assert!(m.chars().count() <= DISCORD_LIMIT);
            assert_eq!(m.matches("```").count() % 2, 0, "balanced: {m}");
        }
        let joined = messages.join("\n").replace("```\n```rust\n", "");
        assert_eq!(words(&joined).len(), words(&text).len());
    }

    proptest! {
        // SPEC C4: whatever the paragraph lengths and chunking, the bound holds and no word is
        // lost or moved.
        #[test]
        fn the_bound_holds_and_no_text_is_lost(
            lengths in proptest::collection::vec(1usize..2600, 1..60),
            chunk in 1usize..400,
            compact in any::<bool>(),
            spare in 1usize..6,
        ) {
            let text = lengths
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let words = "word ".repeat(n / 5 + 1);
                    format!("P{i} {}.", words.trim_end())
                })
                .collect::<Vec<_>>()
                .join("\n\n");
            let style = if compact { ReplyStyle::Compact } else { ReplyStyle::Paragraphs };
            let pacing = Pacing { style, spare_messages: spare, short_paragraph_chars: 300 };
            let messages = reply(&text, pacing, chunk);
            prop_assert!(messages.len() <= bound(&text, spare), "{} > {}", messages.len(), bound(&text, spare));
            prop_assert!(messages.iter().all(|m| m.chars().count() <= DISCORD_LIMIT));
            let joined = messages.join("\n\n");
            prop_assert_eq!(words(&joined), words(&text));
        }
    }
}
