//! The learned offline classifier: a multinomial logistic regression over hashed features of a
//! domain's name (and, on the device, its pages' titles), for the websites no list knows.
//!
//! - [`features`]: what the model sees (character n-grams, segmented words, the ending, a
//!   subdomain; title and path words), hashed;
//! - [`segment`]: the word list and the segmentation of names;
//! - [`weights`]: the weights file and its checks.
//!
//! The weights (`data/model/weights.bin.gz`, with its README) were trained by
//! `scripts/train-classifier` (`examples/train_classifier.rs`) from the open domain table and the
//! bundled map, with a fixed seed; they are derived from the table and share its licence (CC BY-SA
//! 4.0). They are decoded once, on first use; if they cannot be read (refused first by a unit
//! test), the model is off, the log says so, and the rules answer alone.
//!
//! The model's probabilities are calibrated on a validation split, and its bands come from
//! thresholds chosen there: `high` where answers were right at least 97 % of the time (the
//! target is 95 %), `medium` above the point where it is more often right than not. An answer
//! that used titles is at most `medium`: there are no labelled titles to calibrate it on.

pub mod features;
pub mod segment;
pub mod weights;

use std::io::Read;
use std::sync::LazyLock;

use crate::category::Category;
use crate::confidence::Confidence;
use features::{domain_features, Feature, TitleWords};
use weights::Weights;

/// The weights as shipped (gzip).
pub const WEIGHTS_GZ: &[u8] = include_bytes!("../data/model/weights.bin.gz");

/// The attribution to show wherever the weights are distributed (they are derived from the open
/// table and the word list, CC BY-SA 4.0).
pub const ATTRIBUTION: &str = include_str!("../data/model/ATTRIBUTION.txt");

/// Weights in the file as shipped: 2^17 buckets × 21 classes (a unit test checks it).
pub const WEIGHT_COUNT: usize = (1 << 17) * 21;

/// Where the weights come from, in a few words.
pub const SOURCE_SHORT: &str =
    "trained by Sitetrail from the open domain table and the word list, CC BY-SA 4.0";

/// The model, ready to score.
pub struct Model {
    w: Weights,
}

/// The model's answer for one domain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The most probable category.
    pub category: Category,
    /// Its probability.
    pub probability: f32,
    /// Its band, from the thresholds chosen on the validation split.
    pub confidence: Confidence,
}

static MODEL: LazyLock<Option<Model>> = LazyLock::new(|| match Model::decode_gz(WEIGHTS_GZ) {
    Ok(m) => Some(m),
    Err(e) => {
        tracing::error!(error = %e, "the embedded classifier weights cannot be read; the rules answer alone");
        None
    }
});

/// The embedded model, decoded on first use; `None` if its weights cannot be read.
pub fn model() -> Option<&'static Model> {
    MODEL.as_ref()
}

/// Decodes the model and its word list now (they are otherwise decoded on first use): call before
/// taking a lock that judgements run under.
pub fn warm() {
    LazyLock::force(&MODEL);
    segment::words();
}

impl Model {
    /// A model from checked weights.
    pub fn new(w: Weights) -> Model {
        Model { w }
    }

    /// Reads and checks a gzip weights file (see [`weights`]).
    pub fn decode_gz(gz: &[u8]) -> Result<Model, String> {
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(gz)
            .take(64 << 20)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("not a gzip file: {e}"))?;
        Ok(Model::new(Weights::decode(&bytes)?))
    }

    /// Bytes the decoded model holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.w.weights.len() + 4 * self.w.bias.len() + self.w.classes.len()
    }

    /// The weights.
    pub fn weights(&self) -> &Weights {
        &self.w
    }

    /// Bucket bits of the features.
    pub fn bits(&self) -> u32 {
        u32::from(self.w.bits)
    }

    /// The features of `domain` (normalised: lower case, no `www.`) and, if given, its titles.
    pub fn features(&self, domain: &str, titles: Option<&TitleWords>) -> Vec<Feature> {
        let mut f = Vec::with_capacity(64);
        domain_features(domain, self.bits(), &mut f);
        if let Some(t) = titles {
            t.features(self.bits(), &mut f);
        }
        f
    }

    /// The probability of each class (in [`Weights::classes`] order) given `features`.
    pub fn probabilities(&self, features: &[Feature]) -> Vec<f32> {
        let n = self.w.classes.len();
        let mut acc = vec![0f32; n];
        for (i, v) in features {
            let row = *i as usize * n;
            if let Some(ws) = self.w.weights.get(row..row + n) {
                for (a, w) in acc.iter_mut().zip(ws) {
                    *a += v * f32::from(*w);
                }
            }
        }
        let logits: Vec<f32> = acc
            .iter()
            .zip(&self.w.bias)
            .map(|(a, b)| b + self.w.scale * a)
            .collect();
        softmax(&logits)
    }

    /// The model's answer for `domain` (normalised), from its name and, if given, its titles.
    pub fn predict(&self, domain: &str, titles: Option<&TitleWords>) -> Prediction {
        let p = self.probabilities(&self.features(domain, titles));
        let (best, probability) =
            p.iter()
                .copied()
                .enumerate()
                .fold((0, f32::MIN), |acc, (i, q)| if q > acc.1 { (i, q) } else { acc });
        let mut confidence = self.band(probability);
        if titles.is_some_and(|t| !t.is_empty()) && confidence == Confidence::High {
            confidence = Confidence::Medium;
        }
        Prediction {
            category: self.w.classes[best],
            probability,
            confidence,
        }
    }

    /// The band of a probability.
    pub fn band(&self, probability: f32) -> Confidence {
        if probability >= self.w.high {
            Confidence::High
        } else if probability >= self.w.medium {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }
}

/// Softmax of `logits`, stable for any finite input.
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::MIN, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.iter().map(|e| e / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded weights pass every check: a damaged or mismatched file fails here, at test
    /// time, never at run time.
    #[test]
    fn the_embedded_weights_are_valid() {
        let m = Model::decode_gz(WEIGHTS_GZ).unwrap();
        let w = m.weights();
        assert_eq!(w.weights.len(), (1 << w.bits) * w.classes.len());
        assert_eq!(w.weights.len(), WEIGHT_COUNT);
        assert!(w.classes.len() >= 17, "{} classes", w.classes.len());
        assert!(w.high > w.medium && w.high >= 0.5);
        assert!(WEIGHTS_GZ.len() < 3 << 20, "{} bytes shipped", WEIGHTS_GZ.len());
        assert!(model().is_some());
        assert!(
            ATTRIBUTION.contains("CC BY-SA 4.0")
                && ATTRIBUTION.contains("UT1")
                && ATTRIBUTION.contains("wordfreq")
        );
        assert!(Model::decode_gz(&WEIGHTS_GZ[..WEIGHTS_GZ.len() / 2]).is_err());
    }

    #[test]
    fn the_model_reads_the_words_in_a_name() {
        let m = model().unwrap();
        let p = |d: &str| m.predict(d, None).category;
        assert_eq!(p("casinobonus24.de"), Category::Gambling);
        assert_eq!(p("onlinepokerroom-bonus.net"), Category::Gambling);
        assert_eq!(p("universidad-del-norte.edu.co"), Category::Education);
        let q = m.predict("zzqxv.com", None);
        assert!(
            q.confidence != Confidence::High,
            "a name without meaning is not certain: {q:?}"
        );
    }

    #[test]
    fn titles_move_the_answer_and_cap_its_confidence() {
        let m = model().unwrap();
        let mut t = TitleWords::new();
        for title in [
            "Online Casino Bonus",
            "Casino Slots und Roulette",
            "Poker Bonus ohne Einzahlung",
        ] {
            t.add(title);
        }
        let without = m.predict("qwxyzplo.de", None);
        let with = m.predict("qwxyzplo.de", Some(&t));
        assert_ne!(without.category, Category::Gambling);
        assert_eq!(with.category, Category::Gambling, "{without:?} → {with:?}");
        assert_ne!(with.confidence, Confidence::High);
    }

    #[test]
    fn probabilities_are_a_distribution() {
        let m = model().unwrap();
        let p = m.probabilities(&m.features("example.com", None));
        assert_eq!(p.len(), m.weights().classes.len());
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-4);
        let s = softmax(&[1000.0, -1000.0, 0.0]);
        assert!(s.iter().all(|x| x.is_finite()) && (s[0] - 1.0).abs() < 1e-6);
        // A feature index past the table (not possible from `features`) is ignored, not a panic.
        let _ = m.probabilities(&[(u32::MAX, 1.0)]);
    }
}
