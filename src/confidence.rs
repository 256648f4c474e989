//! How sure a category is: `high`, `medium` or `low`, stored as TEXT in
//! `website.category_confidence`.
//!
//! The bands mean something the worker acts on: a `high` built-in answer (the bundled map, the
//! user's own category for the domain or a parent, a government or university ending) is certain,
//! so no remote provider is asked about it; `medium` and `low` answers are provisional, shown at
//! once and refined by the AI when one is configured. The Review list shows the least certain
//! first. Reading a stored value outside the three bands is an error, not a guess.

use std::fmt;
use std::str::FromStr;

use crate::error::{truncate_chars, Error};

/// How sure a category is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Confidence {
    /// A guess: nothing matched (`other`), or a weak hint such as a vanity ending (`.tv`).
    Low,
    /// A rule that is usually right (words in the name, a subdomain hint, the open domain
    /// table, the same site under another ending), or an AI answer.
    Medium,
    /// Certain: the bundled map, the user's own categories, a government or university ending.
    High,
}

crate::names::named!(Confidence {
    Low = "low",
    Medium = "medium",
    High = "high",
});

impl Confidence {
    /// Every band, least certain first.
    pub const ALL: [Confidence; 3] = [Confidence::Low, Confidence::Medium, Confidence::High];

    /// The band of a model's self-reported confidence between 0 and 1: 0.8 and up is `high`,
    /// 0.5 and up `medium`, below that `low`. Anything that is not a number in 0..=1 says
    /// nothing, and an AI answer without a usable confidence is `medium`.
    pub fn from_score(score: Option<f64>) -> Confidence {
        match score {
            Some(s) if (0.8..=1.0).contains(&s) => Confidence::High,
            Some(s) if (0.0..0.5).contains(&s) => Confidence::Low,
            _ => Confidence::Medium,
        }
    }
}

impl fmt::Display for Confidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Confidence {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Confidence::parse(s.trim()).ok_or_else(|| {
            Error::InvalidInput(format!(
                "confidence must be high, medium or low, not {:?}",
                truncate_chars(s.trim(), 40)
            ))
        })
    }
}

crate::sql_enum::sql_text!(Confidence, "confidence", as_str, parse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_values_round_trip_and_unknowns_are_errors() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for c in Confidence::ALL {
            let back: Confidence = conn.query_row("SELECT ?1", [c], |r| r.get(0)).unwrap();
            assert_eq!(back, c);
        }
        let bad: rusqlite::Result<Confidence> = conn.query_row("SELECT 'sure'", [], |r| r.get(0));
        let err = bad.unwrap_err().to_string();
        assert!(
            err.contains("unknown confidence") && err.contains("sure"),
            "{err}"
        );
        let bad: rusqlite::Result<Confidence> = conn.query_row("SELECT 3", [], |r| r.get(0));
        assert!(bad.is_err(), "a number is not a band");
        let none: Option<Confidence> = conn.query_row("SELECT NULL", [], |r| r.get(0)).unwrap();
        assert_eq!(none, None);
    }

    #[test]
    fn scores_fall_into_bands() {
        assert_eq!(Confidence::from_score(Some(0.95)), Confidence::High);
        assert_eq!(Confidence::from_score(Some(0.8)), Confidence::High);
        assert_eq!(Confidence::from_score(Some(0.6)), Confidence::Medium);
        assert_eq!(Confidence::from_score(Some(0.1)), Confidence::Low);
        for nonsense in [None, Some(f64::NAN), Some(7.0), Some(-1.0), Some(f64::INFINITY)] {
            assert_eq!(
                Confidence::from_score(nonsense),
                Confidence::Medium,
                "{nonsense:?}"
            );
        }
        assert!(Confidence::Low < Confidence::High);
    }
}
