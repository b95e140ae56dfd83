use proptest::prelude::*;

use super::*;

fn all(segmenter: &mut Segmenter, chunks: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(segmenter.push(chunk));
    }
    out.extend(segmenter.finish());
    out
}

fn pieces(limit: usize, chunks: &[&str]) -> Vec<Piece> {
    let mut segmenter = Segmenter::new(limit);
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(segmenter.push_pieces(chunk));
    }
    let rest = std::mem::take(&mut segmenter.buf);
    out.extend(segmenter.emit_rest(&rest));
    out
}

/// The C4 invariants: each message within the limit; the bodies are the input in order with
/// only white space between them; a reopened block carries at most a short tag; every message
/// but the last has balanced fences. Returns the messages.
fn check(input: &str, limit: usize, pieces: Vec<Piece>) -> Result<Vec<String>, TestCaseError> {
    let mut cursor = 0;
    let mut messages = Vec::new();
    for piece in pieces {
        if let Some(tag) = &piece.reopen {
            prop_assert!(tag.chars().count() <= MAX_TAG, "tag {tag:?}");
            prop_assert!(!tag.contains(char::is_whitespace), "tag {tag:?}");
        }
        let rest = &input[cursor..];
        let gap = rest.len() - rest.trim_start().len();
        let found = (0..=gap)
            .filter(|&k| rest.is_char_boundary(k))
            .find(|&k| rest[k..].starts_with(piece.body.as_str()));
        prop_assert!(
            found.is_some(),
            "a body is not the input's next text: {:?}",
            piece.body.chars().take(80).collect::<String>()
        );
        cursor += found.unwrap_or(0) + piece.body.len();
        let message = piece.into_message();
        prop_assert!(
            message.chars().count() <= limit,
            "{}",
            message.chars().count()
        );
        messages.push(message);
    }
    prop_assert!(input[cursor..].trim().is_empty(), "input left over");
    for message in messages.iter().rev().skip(1) {
        prop_assert_eq!(message.matches(FENCE).count() % 2, 0, "{}", message);
    }
    Ok(messages)
}

/// Pieces of text that break cutters: fences (with long info strings), long lines, URLs,
/// Markdown spans, CJK, emoji with modifiers and joiners, combining marks, indentation.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,12}( [a-z]{1,12}){0,8}[.!?]? ",
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("\r\n".to_owned()),
        "```[a-z]{0,10}\n",
        Just("```".to_owned()),
        (0usize..2600).prop_map(|n| format!("```{}\n", "a".repeat(n))),
        (0usize..3200).prop_map(|n| "x".repeat(n)),
        (0usize..1200).prop_map(|n| format!("    value = '{}'\n", "v".repeat(n))),
        (0usize..2500).prop_map(|n| format!("https://example.com/{} ", "p".repeat(n))),
        "\\*\\*[a-z ]{1,40}\\*\\* ",
        "`[a-z ]{1,30}` ",
        "\\|\\|[a-z ]{1,30}\\|\\| ",
        "\\[[a-z]{1,10}\\]\\(https://x\\.y/[a-z]{1,10}\\) ",
        (1usize..700).prop_map(|n| "これは文です。".repeat(n)),
        (1usize..900).prop_map(|n| "👍🏽👨‍👩‍👧".repeat(n)),
        (1usize..2500).prop_map(|n| format!("e{}", "\u{301}".repeat(n))),
        Just("\t\t".to_owned()),
        Just("\u{200b}".to_owned()),
    ]
}

/// Splits `text` at the given sizes (in characters), like a stream would.
fn chunked(text: &str, sizes: &[usize]) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut chars = text.chars().peekable();
    for size in sizes.iter().cycle() {
        if chars.peek().is_none() {
            break;
        }
        chunks.push(chars.by_ref().take((*size).max(1)).collect());
    }
    chunks
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    // SPEC C4: the cutter ends for any text, keeps it whole and in order, within the limit, with
    // at most input / 1000 + 2 messages for one paragraph's worth of text.
    #[test]
    fn any_text_is_cut_within_the_limit_and_kept_whole(
        parts in prop::collection::vec(fragment(), 0..40),
        sizes in prop::collection::vec(1usize..400, 1..8),
    ) {
        let input: String = parts.concat();
        let chunks = chunked(&input, &sizes);
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let streamed = check(&input, DISCORD_LIMIT, pieces(DISCORD_LIMIT, &refs))?;
        let whole = check(&input, DISCORD_LIMIT, pieces(DISCORD_LIMIT, &[&input]))?;
        // Each paragraph is its own message (C4), so the bound is per paragraph.
        let paragraphs = input.split('\n').filter(|l| l.trim().is_empty()).count() + 1;
        let bound = input.chars().count() / 1000 + 2 + paragraphs;
        prop_assert!(streamed.len() <= bound, "{} messages, bound {bound}", streamed.len());
        prop_assert!(whole.len() <= bound, "{} messages, bound {bound}", whole.len());
    }

    // SPEC C4: text with no paragraph break gets at most input / 1000 + 2 messages.
    #[test]
    fn one_paragraph_gets_at_most_a_message_per_thousand_characters(
        parts in prop::collection::vec(fragment(), 0..40),
    ) {
        let joined = parts.concat();
        let lines: Vec<&str> = joined.split('\n').filter(|l| !l.trim().is_empty()).collect();
        let input = lines.join("\n");
        let messages = check(&input, DISCORD_LIMIT, pieces(DISCORD_LIMIT, &[&input]))?;
        let bound = input.chars().count() / 1000 + 2;
        prop_assert!(messages.len() <= bound, "{} messages, bound {bound}", messages.len());
    }

    // SPEC C4: a hard cut never splits a character or a grapheme (here: combining marks).
    #[test]
    fn a_hard_cut_lands_on_a_grapheme_boundary(n in 2000usize..5000, k in 1usize..4) {
        let unit = format!("e{}", "\u{301}".repeat(k));
        let input = unit.repeat(n / (k + 1));
        for message in pieces(DISCORD_LIMIT, &[&input]).into_iter().map(Piece::into_message) {
            prop_assert!(message.starts_with('e'), "{:?}", message.chars().next());
            prop_assert!(message.chars().count() <= DISCORD_LIMIT);
        }
    }
}

// SPEC C4 regression: a fence opening line longer than a message (three backticks and 2,500
// letters) once made the cutter put the line back in front of the rest for ever.
#[test]
fn a_fence_opening_line_longer_than_a_message_ends() {
    let input = format!("```{}\ncode();\n```\nafter", "a".repeat(2500));
    let out = pieces(DISCORD_LIMIT, &[&input]);
    assert!(out.len() <= 3, "{} messages", out.len());
    for piece in &out {
        assert!(
            piece.reopen.as_deref().is_none_or(str::is_empty),
            "{piece:?}"
        );
    }
    let messages = check(&input, DISCORD_LIMIT, out).unwrap_or_default();
    assert!(messages.concat().contains("code();"));
}

// SPEC C4 regression: a reply with a 3,000-character line inside a code block is delivered.
#[test]
fn a_long_line_inside_a_code_block_is_delivered() {
    let long = "y".repeat(3000);
    let input = format!("Here:\n\n```python\nx = '{long}'\n```");
    let messages = all(&mut Segmenter::default(), &[&input]);
    assert!(messages.len() <= 4, "{} messages", messages.len());
    assert_eq!(messages[0], "Here:");
    let code: String = messages[1..]
        .iter()
        .map(|m| {
            let m = m.strip_prefix("```python\n").unwrap_or(m);
            m.strip_suffix("\n```").unwrap_or(m).to_owned()
        })
        .collect();
    assert_eq!(code, format!("x = '{long}'"));
    for message in &messages[1..] {
        assert!(message.starts_with("```python\n"), "{}", &message[..20]);
        assert!(message.chars().count() <= DISCORD_LIMIT);
    }
}

// SPEC C4 regression: a 70-line Python block cut in two kept every line's indentation (the
// first code line of the second message once lost its leading spaces).
#[test]
fn indentation_is_kept_at_a_cut_inside_a_code_block() {
    let body: String = (0..70)
        .map(|i| format!("    value_{i} = compute_something_long({i}, {i})\n"))
        .collect();
    let input = format!("```python\ndef f():\n{body}```");
    let messages = all(&mut Segmenter::default(), &[&input]);
    assert_eq!(messages.len(), 2, "{messages:?}");
    let second = messages[1]
        .strip_prefix("```python\n")
        .unwrap_or_else(|| panic!("not reopened: {}", &messages[1][..30]));
    assert!(second.starts_with("    value_"), "{}", &second[..30]);
    for line in body.lines() {
        assert!(
            messages.iter().any(|m| m.lines().any(|l| l == line)),
            "{line:?} did not arrive byte for byte"
        );
    }
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

// SPEC C4: a reopened fence carries only its language tag, never a long info string.
#[test]
fn a_reopened_fence_carries_only_a_short_tag() {
    let code = "line of code here\n".repeat(200);
    let long_info = format!("```{}\n{code}```", "x".repeat(MAX_TAG + 1));
    let out = all(&mut Segmenter::default(), &[&long_info]);
    assert!(out.len() >= 2);
    assert!(out[1].starts_with("```\nline of code"), "{}", &out[1][..30]);
    let tagged = format!("```c++\n{code}```");
    let out = all(&mut Segmenter::default(), &[&tagged]);
    assert!(
        out[1].starts_with("```c++\nline of code"),
        "{}",
        &out[1][..30]
    );
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
    assert!(s.discard().is_empty());
    assert!(s.finish().is_empty());
}
