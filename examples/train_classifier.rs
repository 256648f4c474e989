//! Trains the learned offline classifier and writes its weights file. Run through
//! `scripts/train-classifier` (release build); `-- --help` lists the options.
//!
//! Data: the open domain table (`src/classify/data/open/domains.tsv.gz`, the same bytes as the
//! shared `domain-categories/domains.tsv.gz`) and the bundled map (`src/classify/data/domains.tsv`),
//! plus the rules' vocabulary (`src/classify/data/words.tsv`) as one-word examples, so the
//! hand-written words stay in the model as features. The table is split by
//! `features::split_of` (80 % train, 10 % validation, 10 % test, by registrable name): the model
//! is fitted on train, its temperature and confidence thresholds are chosen on validation, and
//! test is not read here at all (the accuracy bench measures it). Map rows are all training rows
//! (the map answers them before the model is ever asked).
//!
//! Two models are fitted on the same features and compared on validation: multinomial logistic
//! regression (SGD, fixed seed) and naive Bayes (Laplace smoothing); each is calibrated by a
//! temperature chosen on validation. The one with the lower validation log loss is written,
//! quantised to one byte per weight.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

use std::io::{Read, Write};

use sitetrail::classify::builtin::{parse_domain_map, DOMAINS_TSV};
use sitetrail::classify::hints::{parse_words, WordRule, WORDS_TSV};
use sitetrail::classify::model::features::{domain_features, split_of, word_feature, Feature, Split};
use sitetrail::classify::model::weights::Weights;
use sitetrail::classify::model::{softmax, Model};
use sitetrail::classify::open_table::TABLE_GZ;
use sitetrail::Category;

struct Options {
    bits: u32,
    epochs: usize,
    rate: f32,
    l2: f32,
    map_weight: usize,
    vocab_weight: usize,
    prior: f32,
    floor: f32,
    out: Option<String>,
    model: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        bits: 17,
        epochs: 12,
        rate: 0.05,
        l2: 2e-6,
        map_weight: 3,
        vocab_weight: 3,
        prior: 0.75,
        floor: 0.003,
        out: None,
        model: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--bits" => o.bits = v.parse().unwrap(),
            "--epochs" => o.epochs = v.parse().unwrap(),
            "--rate" => o.rate = v.parse().unwrap(),
            "--l2" => o.l2 = v.parse().unwrap(),
            "--map-weight" => o.map_weight = v.parse().unwrap(),
            "--vocab-weight" => o.vocab_weight = v.parse().unwrap(),
            "--prior" => o.prior = v.parse().unwrap(),
            "--floor" => o.floor = v.parse().unwrap(),
            "--out" => o.out = Some(v),
            "--model" => o.model = Some(v),
            "--help" | "-h" => {
                println!("train_classifier [--bits 17] [--epochs 12] [--rate 0.05] [--l2 2e-6] [--map-weight 3] [--vocab-weight 3] [--prior 0.75] [--floor 0.003] [--model lr|nb] [--out FILE.bin.gz]");
                std::process::exit(0);
            }
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    o
}

/// One example: its features and its class.
struct Example {
    features: Vec<Feature>,
    class: usize,
}

/// xorshift64*: the fixed-seed generator of the shuffles.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// A model in full precision: `n` classes, bucket-major weights.
struct Dense {
    n: usize,
    w: Vec<f32>,
    b: Vec<f32>,
}

impl Dense {
    fn logits(&self, f: &[Feature]) -> Vec<f32> {
        let mut out = self.b.clone();
        for (i, v) in f {
            let row = &self.w[*i as usize * self.n..(*i as usize + 1) * self.n];
            for (o, w) in out.iter_mut().zip(row) {
                *o += v * w;
            }
        }
        out
    }
}

fn train_lr(train: &[Example], n: usize, o: &Options) -> Dense {
    let mut m = Dense {
        n,
        w: vec![0.0; (1 << o.bits) * n],
        b: vec![0.0; n],
    };
    let mut order: Vec<usize> = (0..train.len()).collect();
    let mut rng = Rng(0x5173_7472_6169_6c21);
    let mut step = 0f32;
    let total = (o.epochs * train.len()) as f32;
    for epoch in 0..o.epochs {
        rng.shuffle(&mut order);
        let mut loss = 0f64;
        for &k in &order {
            let ex = &train[k];
            let p = softmax(&m.logits(&ex.features));
            loss -= f64::from(p[ex.class].max(1e-9).ln());
            // Linear decay to a tenth of the rate.
            let rate = o.rate * (1.0 - 0.9 * step / total);
            step += 1.0;
            let mut g = p;
            g[ex.class] -= 1.0;
            for (c, gc) in g.iter().enumerate() {
                m.b[c] -= rate * gc;
            }
            for (i, v) in &ex.features {
                let row = &mut m.w[*i as usize * n..(*i as usize + 1) * n];
                for (w, gc) in row.iter_mut().zip(&g) {
                    *w -= rate * (v * gc + o.l2 * *w * train.len() as f32 / 1000.0);
                }
            }
        }
        println!("   lr epoch {epoch}: train loss {:.4}", loss / train.len() as f64);
    }
    m
}

fn train_nb(train: &[Example], n: usize, bits: u32) -> Dense {
    let buckets = 1usize << bits;
    let mut counts = vec![0f32; buckets * n];
    let mut totals = vec![0f32; n];
    let mut docs = vec![0f32; n];
    for ex in train {
        docs[ex.class] += 1.0;
        for (i, v) in &ex.features {
            counts[*i as usize * n + ex.class] += v;
            totals[ex.class] += v;
        }
    }
    let alpha = 0.1f32;
    let mut w = vec![0f32; buckets * n];
    for i in 0..buckets {
        for c in 0..n {
            w[i * n + c] = ((counts[i * n + c] + alpha) / (totals[c] + alpha * buckets as f32)).ln();
        }
    }
    let all: f32 = docs.iter().sum();
    let b = docs.iter().map(|d| ((d + 1.0) / (all + n as f32)).ln()).collect();
    Dense { n, w, b }
}

/// Mean log loss and top-1 of `m` at temperature `t` on `set`.
fn evaluate(m: &Dense, t: f32, set: &[Example]) -> (f64, f64) {
    let mut loss = 0f64;
    let mut right = 0usize;
    for ex in set {
        let l: Vec<f32> = m.logits(&ex.features).iter().map(|x| x / t).collect();
        let p = softmax(&l);
        loss -= f64::from(p[ex.class].max(1e-9).ln());
        let best = argmax(&p);
        right += usize::from(best == ex.class);
    }
    (loss / set.len() as f64, right as f64 / set.len() as f64)
}

fn argmax(p: &[f32]) -> usize {
    p.iter()
        .enumerate()
        .fold((0, f32::MIN), |a, (i, q)| if *q > a.1 { (i, *q) } else { a })
        .0
}

/// The temperature with the lowest validation log loss (a grid, then a finer one).
fn temperature(m: &Dense, val: &[Example]) -> f32 {
    let mut best = (f64::MAX, 1.0f32);
    for k in 0..60 {
        let t = 0.2 * 1.1f32.powi(k);
        let (loss, _) = evaluate(m, t, val);
        if loss < best.0 {
            best = (loss, t);
        }
    }
    best.1
}

/// Quantises `m` at temperature `t` to one byte per weight. Each bucket's weights are centred
/// first (adding one value to every class of a feature changes no probability).
fn quantise(m: &Dense, t: f32, bits: u32, classes: &[Category], high: f32, medium: f32) -> Weights {
    let n = m.n;
    let mut w = m.w.clone();
    for row in w.chunks_mut(n) {
        let mean = row.iter().sum::<f32>() / n as f32;
        row.iter_mut().for_each(|x| *x -= mean);
    }
    // Clip the rare extreme weights at the 99.99th percentile of their size: the rest keep
    // their resolution.
    let mut mags: Vec<f32> = w.iter().map(|x| x.abs()).filter(|x| *x > 0.0).collect();
    mags.sort_by(f32::total_cmp);
    let clip = mags
        .get(mags.len() * 9999 / 10000)
        .copied()
        .unwrap_or(1.0)
        .max(1e-6);
    let scale = clip / 127.0;
    let q = w
        .iter()
        .map(|x| (x.clamp(-clip, clip) / scale).round() as i8)
        .collect();
    Weights {
        bits: bits as u8,
        classes: classes.to_vec(),
        scale: scale / t,
        high,
        medium,
        bias: m.b.iter().map(|b| b / t).collect(),
        weights: q,
    }
}

/// The lowest probability at which the answers at or above it are right at least `target` of the
/// time, over at least `min` answers (1.0 if there is none).
fn lowest_sure(mut scored: Vec<(f32, bool)>, target: f64, min: usize) -> f32 {
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut high = 1.0;
    let mut right = 0usize;
    for (k, (p, ok)) in scored.iter().enumerate() {
        right += usize::from(*ok);
        if k + 1 >= min && right as f64 / (k + 1) as f64 >= target {
            high = *p;
        }
    }
    high
}

/// Thresholds on validation probabilities: `high` is the lowest probability at which answers at
/// or above it are right ≥ 97 % of the time on validation (over at least 50 answers); `medium` is
/// one half.
fn thresholds(model: &Model, val: &[Example], classes: &[Category], dev: &[(f32, bool)]) -> (f32, f32) {
    let scored: Vec<(f32, bool)> = val
        .iter()
        .map(|ex| {
            let p = model.probabilities(&ex.features);
            let best = argmax(&p);
            (p[best], classes[best] == classes[ex.class])
        })
        .collect();
    // Only the table's validation rows decide. The hand-written dev list was tried as a second
    // condition (≥ 90 % there too): no threshold reaches it, since the model's surest answers on
    // it are sites whose hand label and the table's sense differ (garden magazines are `shopping`
    // in the table's sense of garden shops); its figure is printed below instead.
    let _ = dev;
    let high = lowest_sure(scored, 0.97, 50);
    // Calibrated, a probability of one half is right about half of the time: below it, an answer
    // is a guess for the Review list.
    let medium = 0.5f32;
    (high.max(0.5), medium.min(high))
}

fn main() {
    let o = options();
    let classes: Vec<Category> = Category::ALL
        .iter()
        .copied()
        .filter(|c| *c != Category::Other)
        .collect();
    let class_of = |c: Category| classes.iter().position(|x| *x == c);

    let mut text = String::new();
    flate2::read::GzDecoder::new(TABLE_GZ)
        .read_to_string(&mut text)
        .unwrap();
    let (mut train, mut val) = (Vec::new(), Vec::new());
    let feats = |d: &str| {
        let mut f = Vec::new();
        domain_features(d, o.bits, &mut f);
        f
    };
    let mut test_rows = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (d, c) = line.split_once('\t').unwrap();
        let c: Category = c.parse().unwrap();
        let Some(class) = class_of(c) else { continue };
        match split_of(d) {
            Split::Train => train.push(Example {
                features: feats(d),
                class,
            }),
            Split::Validation => val.push(Example {
                features: feats(d),
                class,
            }),
            Split::Test => test_rows += 1,
        }
    }
    let table_train = train.len();
    for (d, c) in parse_domain_map(DOMAINS_TSV).unwrap() {
        let Some(class) = class_of(c) else { continue };
        let d = d.strip_prefix("www.").unwrap_or(d);
        for _ in 0..o.map_weight {
            train.push(Example {
                features: feats(d),
                class,
            });
        }
    }
    let map_rows = train.len() - table_train;
    for rule in parse_words(WORDS_TSV).unwrap() {
        if let WordRule::Word(word, _, c) = rule {
            let Some(class) = class_of(c) else { continue };
            for _ in 0..o.vocab_weight {
                train.push(Example {
                    features: vec![word_feature(word, o.bits)],
                    class,
                });
            }
        }
    }
    println!(
        "train: {table_train} table rows + {map_rows} map rows (×{}) + {} vocabulary rows (×{}); validation: {}; test (not read): {test_rows}",
        o.map_weight,
        train.len() - table_train - map_rows,
        o.vocab_weight,
        val.len()
    );

    let mut lr = train_lr(&train, classes.len(), &o);
    let mut nb = train_nb(&train, classes.len(), o.bits);
    // The table's class mix (a quarter each of shops, casinos and games) is not a person's
    // history: `--prior α` takes α × log(prior) out of the biases, so a name without evidence
    // is not pulled towards the table's largest classes.
    // Counted over every training row; a class's share is floored (`--floor`), so the classes the
    // table lacks (known from the map alone) are not pushed up too far by the correction.
    let mut counts = vec![0f32; classes.len()];
    for ex in &train {
        counts[ex.class] += 1.0;
    }
    let all: f32 = counts.iter().sum();
    for m in [&mut lr, &mut nb] {
        for (b, c) in m.b.iter_mut().zip(&counts) {
            *b -= o.prior * (c / all).max(o.floor).ln();
        }
    }
    let t_lr = temperature(&lr, &val);
    let t_nb = temperature(&nb, &val);
    let (l_lr, a_lr) = evaluate(&lr, t_lr, &val);
    let (l_nb, a_nb) = evaluate(&nb, t_nb, &val);
    println!("validation: logistic regression log loss {l_lr:.4}, top-1 {a_lr:.4} (T = {t_lr:.3})");
    println!("validation: naive Bayes          log loss {l_nb:.4}, top-1 {a_nb:.4} (T = {t_nb:.3})");
    let use_lr = match o.model.as_deref() {
        Some("lr") => true,
        Some("nb") => false,
        _ => l_lr <= l_nb,
    };
    let (m, t) = if use_lr { (&lr, t_lr) } else { (&nb, t_nb) };
    println!(
        "chosen: {}",
        if use_lr {
            "logistic regression"
        } else {
            "naive Bayes"
        }
    );
    let draft = Model::new(quantise(m, t, o.bits, &classes, 1.0, 0.0));
    let dev = parse_domain_map(include_str!("../benches/data/dev_domains.tsv")).unwrap();
    let dev_scored: Vec<(f32, bool)> = dev
        .iter()
        .map(|(d, c)| {
            let p = draft.predict(d, None);
            (p.probability, p.category == *c)
        })
        .collect();
    let (high, medium) = thresholds(&draft, &val, &classes, &dev_scored);
    let weights = quantise(m, t, o.bits, &classes, high, medium);
    let model = Model::new(weights.clone());
    let mut bands = [(0usize, 0usize); 3];
    let mut right = 0;
    for ex in &val {
        let p = model.probabilities(&ex.features);
        let best = argmax(&p);
        let ok = best == ex.class;
        right += usize::from(ok);
        let band = if p[best] >= high {
            0
        } else if p[best] >= medium {
            1
        } else {
            2
        };
        bands[band].0 += usize::from(ok);
        bands[band].1 += 1;
    }
    println!(
        "quantised, validation: top-1 {:.4}; high (p ≥ {high:.3}) {}/{}, medium (p ≥ {medium:.3}) {}/{}, low {}/{}",
        right as f64 / val.len() as f64,
        bands[0].0,
        bands[0].1,
        bands[1].0,
        bands[1].1,
        bands[2].0,
        bands[2].1
    );
    // The hand-written dev list (benches/data/dev_domains.tsv, the list the rules are tuned on):
    // the model alone, per band, as a check of how it does off the table's distribution.
    let mut dev_bands = [(0usize, 0usize); 3];
    for (d, c) in &dev {
        let p = model.predict(d, None);
        let band = if p.probability >= high {
            0
        } else if p.probability >= medium {
            1
        } else {
            2
        };
        dev_bands[band].0 += usize::from(p.category == *c);
        if band == 0 && p.category != *c && std::env::var_os("SHOW_DEV_HIGH_MISSES").is_some() {
            println!(
                "   dev high miss: {d} labelled {c}, got {} ({:.3})",
                p.category, p.probability
            );
        }
        dev_bands[band].1 += 1;
    }
    println!(
        "dev list, model alone: right {}/{}; high {}/{}, medium {}/{}, low {}/{}",
        dev_bands.iter().map(|b| b.0).sum::<usize>(),
        dev.len(),
        dev_bands[0].0,
        dev_bands[0].1,
        dev_bands[1].0,
        dev_bands[1].1,
        dev_bands[2].0,
        dev_bands[2].1
    );
    if let Some(out) = &o.out {
        let bytes = weights.encode();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&bytes).unwrap();
        let gz = gz.finish().unwrap();
        std::fs::write(out, &gz).unwrap();
        println!("wrote {out}: {} bytes ({} uncompressed)", gz.len(), bytes.len());
    }
}
