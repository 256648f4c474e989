//! The weights file: its layout, and the checks that refuse a damaged or mismatched one.
//!
//! Little-endian, gzip-compressed as shipped (`data/model/weights.bin.gz`):
//!
//! ```text
//! magic "STCM" | format u16 (1) | feature version u16 | bucket bits u8 | classes u8 (n)
//! class ids: n bytes (indices into Category::ALL, distinct)
//! scale f32 | high f32 | medium f32 | bias: n × f32
//! weights: 2^bits × n × i8, bucket-major (a logit is bias + scale × Σ value × weight)
//! checksum u64: FNV-1a of every byte before it
//! ```
//!
//! The scores are already calibrated (the trainer divided scale and bias by the temperature it
//! chose on the validation split), so a softmax of them is the model's probability. Every check
//! is made when the file is read: the magic, the format and feature versions, the length implied
//! by the shape, the checksum, class ids, finite numbers, thresholds between 0 and 1. A unit test
//! reads the embedded file, so a damaged one fails the build's tests, and at run time a file that
//! fails is logged and the rules answer alone (never a panic).

use super::features::FEATURE_VERSION;
use super::segment::fnv1a;
use crate::category::Category;

/// The file's magic bytes.
pub const MAGIC: &[u8; 4] = b"STCM";
/// The layout's version.
pub const FORMAT: u16 = 1;
/// Largest bucket count accepted (2^24 × 22 bytes would be 369 MB).
pub const MAX_BITS: u8 = 20;
/// The checksum's seed.
const CHECKSUM_SEED: u64 = 0x5374_436d;

/// The model's parameters, as read from (or written to) the weights file.
#[derive(Clone, Debug, PartialEq)]
pub struct Weights {
    /// Feature buckets: 2^bits.
    pub bits: u8,
    /// The categories the model answers, in its class order.
    pub classes: Vec<Category>,
    /// Weight scale: a weight is `scale × i8`.
    pub scale: f32,
    /// Probability at and above which an answer is `high`.
    pub high: f32,
    /// Probability at and above which an answer is `medium`.
    pub medium: f32,
    /// Bias of each class.
    pub bias: Vec<f32>,
    /// `2^bits × classes` quantised weights, bucket-major.
    pub weights: Vec<i8>,
}

impl Weights {
    /// The file's bytes (uncompressed).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.weights.len() + 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(&FEATURE_VERSION.to_le_bytes());
        out.push(self.bits);
        out.push(u8::try_from(self.classes.len()).unwrap_or(u8::MAX));
        for c in &self.classes {
            out.push(u8::try_from(category_index(*c)).unwrap_or(u8::MAX));
        }
        for f in [self.scale, self.high, self.medium].iter().chain(&self.bias) {
            out.extend_from_slice(&f.to_le_bytes());
        }
        out.extend(self.weights.iter().map(|w| w.to_le_bytes()[0]));
        let sum = fnv1a(CHECKSUM_SEED, &out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Reads and checks the file's bytes (uncompressed); an error says what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Weights, String> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != MAGIC {
            return Err("not a Sitetrail weights file (wrong magic)".into());
        }
        let format = r.u16()?;
        if format != FORMAT {
            return Err(format!("weights format {format}, this build reads {FORMAT}"));
        }
        let features = r.u16()?;
        if features != FEATURE_VERSION {
            return Err(format!(
                "weights trained for feature version {features}, this build computes version {FEATURE_VERSION}"
            ));
        }
        let bits = r.u8()?;
        if !(8..=MAX_BITS).contains(&bits) {
            return Err(format!("{bits} bucket bits is outside 8..={MAX_BITS}"));
        }
        let n = usize::from(r.u8()?);
        if !(2..=Category::ALL.len()).contains(&n) {
            return Err(format!("{n} classes is outside 2..={}", Category::ALL.len()));
        }
        let mut classes = Vec::with_capacity(n);
        for _ in 0..n {
            let i = usize::from(r.u8()?);
            let c = *Category::ALL
                .get(i)
                .ok_or_else(|| format!("class id {i} is not a category"))?;
            if classes.contains(&c) {
                return Err(format!("class {c} is listed twice"));
            }
            classes.push(c);
        }
        let scale = r.f32()?;
        let high = r.f32()?;
        let medium = r.f32()?;
        let bias = (0..n).map(|_| r.f32()).collect::<Result<Vec<_>, _>>()?;
        let expected = (1usize << bits) * n;
        // What is left must be exactly the weights and the checksum: a cut or padded file is refused
        // before its checksum is even computed.
        let left = bytes.len() - r.at;
        if left != expected + 8 {
            return Err(format!(
                "{left} bytes of weights and checksum, the shape ({bits} bits × {n} classes) needs {}",
                expected + 8
            ));
        }
        let weights: Vec<i8> = r
            .take(expected)?
            .iter()
            .map(|b| i8::from_le_bytes([*b]))
            .collect();
        let body = r.at;
        let sum = u64::from_le_bytes(
            r.take(8)?
                .try_into()
                .map_err(|_| "the checksum is cut".to_owned())?,
        );
        if sum != fnv1a(CHECKSUM_SEED, &bytes[..body]) {
            return Err("the checksum does not match: the file is damaged".into());
        }
        if !(scale.is_finite() && scale > 0.0 && bias.iter().all(|b| b.is_finite())) {
            return Err("a scale or bias is not a finite number".into());
        }
        if !(0.0..=1.0).contains(&medium) || !(medium..=1.0).contains(&high) {
            return Err(format!(
                "thresholds high {high} and medium {medium} are not 0 ≤ medium ≤ high ≤ 1"
            ));
        }
        Ok(Weights {
            bits,
            classes,
            scale,
            high,
            medium,
            bias,
            weights,
        })
    }
}

fn category_index(c: Category) -> usize {
    Category::ALL.iter().position(|x| *x == c).unwrap_or(0)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("the file ends early, at byte {}", self.bytes.len()))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn f32(&mut self) -> Result<f32, String> {
        let b = self.take(4)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Weights {
        Weights {
            bits: 8,
            classes: vec![Category::Shopping, Category::Gambling, Category::News],
            scale: 0.01,
            high: 0.9,
            medium: 0.5,
            bias: vec![0.1, -0.2, 0.3],
            weights: (0..256 * 3)
                .map(|i| i8::try_from(i % 200 - 100).unwrap())
                .collect(),
        }
    }

    #[test]
    fn weights_round_trip() {
        let w = small();
        assert_eq!(Weights::decode(&w.encode()).unwrap(), w);
    }

    #[test]
    fn a_damaged_or_mismatched_file_is_refused_with_a_reason() {
        let good = small().encode();
        let refused = |bytes: &[u8], why: &str| {
            let e = Weights::decode(bytes).unwrap_err();
            assert!(e.contains(why), "{e:?} should say {why:?}");
        };
        // Every single flipped bit anywhere in the file is caught.
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            assert!(
                Weights::decode(&bad).is_err(),
                "a flip at byte {at} was not caught"
            );
        }
        let mut bad = good.clone();
        bad[100] ^= 1;
        refused(&bad, "checksum");
        refused(&good[..good.len() - 1], "needs");
        refused(&[good.as_slice(), &[0]].concat(), "needs");
        refused(&good[..10], "ends early");
        refused(b"PK\x03\x04", "magic");
        refused(b"", "ends early");
        let mut other_version = good.clone();
        other_version[6] = other_version[6].wrapping_add(1);
        refused(&other_version, "feature version");
        let mut w = small();
        w.classes[1] = Category::Shopping;
        refused(&w.encode(), "twice");
        let mut w = small();
        w.high = 0.4;
        refused(&w.encode(), "thresholds");
        let mut w = small();
        w.bias[0] = f32::NAN;
        refused(&w.encode(), "finite");
        let mut w = small();
        w.weights.pop();
        refused(&w.encode(), "needs");
    }
}
