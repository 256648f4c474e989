//! The built-in classifier answers exactly what it answered when
//! `tests/fixtures/builtin_answers.tsv.gz` was recorded (see `examples/record_builtin_answers.rs`):
//! the same category, confidence and rule for every domain, the same word-rule answer, and the
//! model's same category and probability, to the bit. A change meant to make the rules faster
//! must keep this green without recording the file again.

use std::io::Read;

use sitetrail::classify::model;

use crate::builtin_answer::answer_line;

const ANSWERS_GZ: &[u8] = include_bytes!("fixtures/builtin_answers.tsv.gz");

#[test]
fn the_rules_answer_what_they_answered_when_recorded() {
    let mut text = String::new();
    flate2::read::GzDecoder::new(ANSWERS_GZ)
        .read_to_string(&mut text)
        .unwrap();
    let m = model::model().expect("the embedded model");
    let mut differ = Vec::new();
    let mut lines = 0;
    for line in text.lines() {
        lines += 1;
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 7, "{line:?}");
        let now = answer_line(m, f[0]);
        if now != line {
            differ.push(format!("recorded {line:?}\n     now {now:?}"));
        }
    }
    assert!(lines > 20_000, "only {lines} recorded answers");
    assert!(
        differ.is_empty(),
        "{} of {lines} answers differ from the recorded ones, first:\n{}",
        differ.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}
