//! `--log-format json`: one JSON object a line on stderr for log shippers, with the time (RFC
//! 3339, UTC), the level, the target, the message and the event's fields. The same filters apply
//! as to the text format (`SITETRAIL_HUB_LOG`, and the PostgreSQL client's statement parameters
//! always dropped), and the events are the same: ids, counts, sizes and times, never a login, a
//! header or a payload.

use std::io::Write;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

/// The JSON-lines layer.
pub struct JsonLines;

struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::String(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().to_owned(), Value::String(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
}

impl<S: tracing::Subscriber> Layer<S> for JsonLines {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut line = Map::new();
        line.insert(
            "time".into(),
            Value::String(crate::accounts::rfc3339_millis(now_ms)),
        );
        line.insert("level".into(), Value::String(meta.level().as_str().to_owned()));
        line.insert("target".into(), Value::String(meta.target().to_owned()));
        let mut fields = Map::new();
        event.record(&mut Fields(&mut fields));
        for (k, v) in fields {
            // The envelope's keys stay the envelope's.
            let key = if line.contains_key(&k) {
                format!("field_{k}")
            } else {
                k
            };
            line.insert(key, v);
        }
        let text = Value::Object(line).to_string();
        // A failing stderr has nowhere left to be said.
        let _ = writeln!(std::io::stderr().lock(), "{text}");
    }
}
