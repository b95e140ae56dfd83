//! The message cutter (SPEC C4) on replies full of what makes cutting hard: long lines inside
//! code blocks, fences, URLs, Markdown spans and CJK. Throughput on a 100 KB reply, fed whole and
//! streamed in 16-character chunks (also taking the draft after each chunk, as an `/ask` does),
//! and the same reply at 10 KB, 100 KB and 1 MB, so a worst case that is not linear shows.
//!
//! Run: `cargo bench --bench segment`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use persona_bot::engine::segment::Segmenter;

/// About `bytes` of reply: prose, a code block with a 3,000-character line, a long fence
/// opening line, a long URL, spans and CJK sentences, repeated.
fn reply(bytes: usize) -> String {
    let unit = format!(
        "Here is the answer, with **bold text** and `inline code`. See https://example.com/{}\n\n\
         ```python\ndef f():\n    x = '{}'\n    return x\n```\n\n\
         これは文です。これも文です。\n```{}\nraw\n```\n\n{}\n\n",
        "p".repeat(300),
        "y".repeat(3000),
        "a".repeat(2500),
        "word ".repeat(500),
    );
    let mut text = String::with_capacity(bytes + unit.len());
    while text.len() < bytes {
        text.push_str(&unit);
    }
    text
}

fn cut_whole(text: &str) -> usize {
    let mut segmenter = Segmenter::default();
    let mut n = segmenter.push(text).len();
    n += segmenter.finish().len();
    n
}

fn cut_streamed(chunks: &[String]) -> usize {
    let mut segmenter = Segmenter::default();
    let mut n = 0;
    for chunk in chunks {
        n += segmenter.push(chunk).len();
    }
    n + segmenter.finish().len()
}

/// [`cut_streamed`], with the message being written taken after every chunk, as a turn
/// answering an interaction shows it (SPEC A5).
fn cut_streamed_with_drafts(chunks: &[String]) -> usize {
    let mut segmenter = Segmenter::default();
    let mut n = 0;
    for chunk in chunks {
        n += segmenter.push(chunk).len();
        n += segmenter.draft().len() & 1;
    }
    n + segmenter.finish().len()
}

fn chunks_of(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("segment");
    for bytes in [10_000, 100_000, 1_000_000] {
        let text = reply(bytes);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("whole", bytes), &text, |b, text| {
            b.iter(|| cut_whole(text))
        });
        let chunks = chunks_of(&text, 16);
        group.bench_with_input(
            BenchmarkId::new("streamed_16", bytes),
            &chunks,
            |b, chunks| b.iter(|| cut_streamed(chunks)),
        );
        group.bench_with_input(
            BenchmarkId::new("streamed_16_drafts", bytes),
            &chunks,
            |b, chunks| b.iter(|| cut_streamed_with_drafts(chunks)),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
