//! Cutting streamed text into Discord messages (SPEC C4): at paragraph breaks as they complete,
//! and a paragraph longer than the limit at a sentence end, else a line break, else white space.
//! A cut never lands inside a URL or a Markdown span (inline code, a link, emphasis, a spoiler);
//! a cut inside a code fence closes the fence and reopens it, with its language, in the next
//! message. Pure logic: the caller sends what comes out.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// Discord's message length limit, in characters.
pub const DISCORD_LIMIT: usize = 2000;

const FENCE: &str = "```";

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

/// Accumulates streamed text and hands out complete messages.
#[derive(Debug)]
pub struct Segmenter {
    buf: String,
    limit: usize,
}

impl Default for Segmenter {
    fn default() -> Self {
        Self::new(DISCORD_LIMIT)
    }
}

impl Segmenter {
    /// `limit` is in characters; it must leave room for a fence (at least 64).
    pub fn new(limit: usize) -> Self {
        Self {
            buf: String::new(),
            limit: limit.max(64),
        }
    }

    /// The text not yet handed out.
    pub fn pending(&self) -> &str {
        &self.buf
    }

    /// Adds streamed text; returns the messages it completed.
    pub fn push(&mut self, text: &str) -> Vec<String> {
        self.buf.push_str(text);
        let mut out = Vec::new();
        loop {
            if let Some((end, next)) = paragraph_break(&self.buf) {
                let paragraph: String = self.buf[..end].to_owned();
                self.buf.drain(..next);
                self.emit_all(paragraph, &mut out);
                continue;
            }
            if self.buf.chars().count() > self.limit {
                let (piece, rest) = split_long(&self.buf, self.limit);
                out.extend(non_empty(piece));
                self.buf = rest;
                continue;
            }
            return out;
        }
    }

    /// The end of a pass: everything left, cut to the limit.
    pub fn finish(&mut self) -> Vec<String> {
        let rest = std::mem::take(&mut self.buf);
        let mut out = Vec::new();
        self.emit_all(rest, &mut out);
        out
    }

    /// A user stop: the complete sentences of what is pending; a partial sentence is dropped.
    pub fn finish_complete_sentences(&mut self) -> Vec<String> {
        let rest = std::mem::take(&mut self.buf);
        let end = sentence_ends(&rest).last().copied().unwrap_or(0);
        let mut out = Vec::new();
        self.emit_all(rest[..end].to_owned(), &mut out);
        out
    }

    /// A follow-up interrupt: the pending text is thrown away.
    pub fn discard(&mut self) {
        self.buf.clear();
    }

    fn emit_all(&self, mut text: String, out: &mut Vec<String>) {
        while text.chars().count() > self.limit {
            let (piece, rest) = split_long(&text, self.limit);
            out.extend(non_empty(piece));
            text = rest;
        }
        out.extend(non_empty(text));
    }
}

fn non_empty(text: String) -> Option<String> {
    let trimmed = text.trim_end();
    if trimmed.trim_start().is_empty() {
        None
    } else {
        Some(trimmed.trim_start_matches('\n').to_owned())
    }
}

/// The first blank line outside a code fence after some content: (end of the paragraph, start
/// of the next, past any further blank lines).
fn paragraph_break(text: &str) -> Option<(usize, usize)> {
    let mut in_fence = false;
    let mut seen_content = false;
    let mut offset = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let blank = line.ends_with('\n') && line.trim().is_empty();
        if line.trim_start().starts_with(FENCE) {
            in_fence = !in_fence;
        }
        if blank && !in_fence && seen_content {
            let mut next = offset + line.len();
            while let Some(more) = lines.next_if(|l| l.ends_with('\n') && l.trim().is_empty()) {
                next += more.len();
            }
            return Some((offset, next));
        }
        seen_content |= !line.trim().is_empty();
        offset += line.len();
    }
    None
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

/// The open fence's opening line (with its language) at the end of `text`, if a fence is open.
fn open_fence(text: &str) -> Option<String> {
    let mut open: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix(FENCE) {
            open = match open {
                Some(_) => None,
                None => Some(format!("{FENCE}{}", lang.trim())),
            };
        }
    }
    open
}

/// Cuts `text` (longer than `limit`) into a first message and the rest.
fn split_long(text: &str, limit: usize) -> (String, String) {
    // Room for closing a fence ("\n```").
    let budget = byte_at_char(text, limit - FENCE.len() - 1);
    let spans = protected_spans(text);
    let cut = sentence_ends(text)
        .into_iter()
        .rfind(|&p| p > 0 && p <= budget)
        .or_else(|| {
            text.char_indices()
                .map(|(i, c)| (i, c.is_whitespace()))
                .rfind(|&(i, space)| space && i > 0 && i <= budget && !inside(&spans, i))
                .map(|(i, _)| i)
        })
        .unwrap_or_else(|| {
            // No boundary at all: a hard cut, moved to the start of a span it would split.
            spans
                .iter()
                .find(|s| s.start < budget && budget < s.end && s.start > 0)
                .map_or(budget, |s| s.start)
        });
    let (head, tail) = text.split_at(cut);
    let mut head = head.trim_end().to_owned();
    let mut rest = tail.trim_start_matches([' ', '\n']).to_owned();
    if let Some(opening) = open_fence(&head) {
        head.push('\n');
        head.push_str(FENCE);
        rest = format!("{opening}\n{rest}");
    }
    (head, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(segmenter: &mut Segmenter, chunks: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(segmenter.push(chunk));
        }
        out.extend(segmenter.finish());
        out
    }

    // SPEC C4: paragraphs become messages as they complete.
    #[test]
    fn paragraphs_become_messages_as_they_complete() {
        let mut s = Segmenter::default();
        assert!(s.push("Hello the").is_empty());
        assert_eq!(s.push("re.\n\nSecond "), vec!["Hello there."]);
        assert_eq!(s.pending(), "Second ");
        assert_eq!(s.push("para.\n\n\n\nThird"), vec!["Second para."]);
        assert_eq!(s.finish(), vec!["Third"]);
    }

    // SPEC C4: a long paragraph is cut at a sentence end, each message within the limit.
    #[test]
    fn long_paragraph_is_cut_at_sentence_ends_within_the_limit() {
        let sentence = "This sentence is exactly fifty characters long ok. ";
        let text = sentence.repeat(100);
        let out = all(&mut Segmenter::default(), &[&text]);
        assert!(out.len() >= 3, "{}", out.len());
        for message in &out {
            assert!(message.chars().count() <= DISCORD_LIMIT);
            assert!(
                message.ends_with("ok."),
                "cut mid-sentence: ...{}",
                &message[message.len() - 20..]
            );
        }
        assert_eq!(out.concat().replace(' ', ""), text.replace(' ', ""));
    }

    // SPEC C4: a code fence cut in two is closed and reopened with its language.
    #[test]
    fn code_fence_is_closed_and_reopened_across_a_cut() {
        let code: String = (0..300).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Here:\n\n```rust\n{code}```\n\nDone.");
        let out = all(&mut Segmenter::default(), &[&text]);
        assert_eq!(out[0], "Here:");
        let code_messages = &out[1..out.len() - 1];
        assert!(code_messages.len() >= 2);
        for message in code_messages {
            assert!(message.starts_with("```rust\n"), "{}", &message[..20]);
            assert!(
                message.ends_with("```"),
                "{}",
                &message[message.len() - 20..]
            );
            assert!(message.chars().count() <= DISCORD_LIMIT);
            assert_eq!(message.matches("```").count(), 2);
        }
        assert_eq!(out.last().map(String::as_str), Some("Done."));
    }

    // SPEC C4: a blank line inside a code fence does not end a message.
    #[test]
    fn blank_line_inside_a_fence_is_not_a_paragraph_break() {
        let mut s = Segmenter::default();
        assert!(s.push("```py\na = 1\n\nb = 2\n").is_empty());
        assert_eq!(s.push("```\n\nafter"), vec!["```py\na = 1\n\nb = 2\n```"]);
    }

    // SPEC C4: a URL or a Markdown span is never cut.
    #[test]
    fn urls_and_markdown_spans_are_never_cut() {
        let url = format!("https://example.com/{}", "a".repeat(120));
        let filler = "word ".repeat(380); // 1900 characters
        let text = format!("{filler}see {url} and **bold text here** end");
        let out = all(&mut Segmenter::default(), &[&text]);
        assert!(out.iter().any(|m| m.contains(&url)), "the URL was cut");
        let bold = "word ".repeat(395) + "**a bold span that must stay whole** tail";
        let out = all(&mut Segmenter::default(), &[&bold]);
        assert!(
            out.iter()
                .any(|m| m.contains("**a bold span that must stay whole**")),
            "{out:?}"
        );
        for m in &out {
            assert!(m.chars().count() <= DISCORD_LIMIT);
        }
    }

    // SPEC C4: text without any boundary is still cut within the limit.
    #[test]
    fn text_without_boundaries_is_hard_cut_within_the_limit() {
        let text = "x".repeat(4500);
        let out = all(&mut Segmenter::default(), &[&text]);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|m| m.chars().count() <= DISCORD_LIMIT));
        assert_eq!(out.concat(), text);
    }

    // SPEC C4: CJK sentence ends count as boundaries.
    #[test]
    fn cjk_sentence_ends_are_boundaries() {
        let text = "これは文です。".repeat(400);
        let out = all(&mut Segmenter::default(), &[&text]);
        assert!(out.len() >= 2);
        assert!(
            out.iter()
                .all(|m| m.ends_with('。') && m.chars().count() <= DISCORD_LIMIT)
        );
    }

    // SPEC C5: a user stop keeps complete sentences; a follow-up discards the pending text.
    #[test]
    fn stop_keeps_complete_sentences_and_discard_drops_everything() {
        let mut s = Segmenter::default();
        s.push("One done. Two half");
        assert_eq!(s.finish_complete_sentences(), vec!["One done."]);
        assert_eq!(s.pending(), "");
        s.push("pending words");
        s.discard();
        assert!(s.finish().is_empty());
    }
}
