//! States stored as TEXT: one trait for the enums the database holds by name, and their
//! `ToSql`/`FromSql`.
//!
//! Rows carry these enums, never strings. A stored value that is not one of the enum's names is
//! an error when the row is read ("unknown job status "X" in the database"), never silently some
//! default: a file written by a newer or broken program is reported, not misread.

use rusqlite::types::{FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};

/// An enum stored as one of a fixed set of TEXT values.
pub trait SqlText: Sized + Copy + 'static {
    /// What the value is, for error messages ("job status").
    const WHAT: &'static str;
    /// The stored value.
    fn as_sql_str(self) -> &'static str;
    /// The enum for a stored value, `None` if the value is unknown.
    fn from_sql_str(s: &str) -> Option<Self>;
}

/// A stored TEXT value that is not one of its enum's names.
#[derive(Debug, thiserror::Error)]
#[error("unknown {what} {value:?} in the database (written by a newer or another program?)")]
pub struct UnknownStoredValue {
    /// What the column holds ("job status").
    pub what: &'static str,
    /// The value found (shortened).
    pub value: String,
}

/// `ToSql` for a [`SqlText`] enum.
pub fn to_sql<T: SqlText>(v: T) -> rusqlite::Result<ToSqlOutput<'static>> {
    Ok(ToSqlOutput::Borrowed(ValueRef::Text(v.as_sql_str().as_bytes())))
}

/// `FromSql` for a [`SqlText`] enum: an unknown value is an error naming it.
pub fn from_sql<T: SqlText>(value: ValueRef<'_>) -> FromSqlResult<T> {
    let s = value.as_str()?;
    T::from_sql_str(s).ok_or_else(|| {
        FromSqlError::Other(Box::new(UnknownStoredValue {
            what: T::WHAT,
            value: crate::error::truncate_chars(s, 60),
        }))
    })
}

/// Implements [`SqlText`], `ToSql` and `FromSql` for an enum with `as_str`-like and
/// `parse`-like methods: `sql_text!(JobStatus, "job status", as_str, parse);`
macro_rules! sql_text {
    ($ty:ty, $what:literal, $as:ident, $parse:ident) => {
        impl $crate::sql_enum::SqlText for $ty {
            const WHAT: &'static str = $what;
            fn as_sql_str(self) -> &'static str {
                self.$as()
            }
            fn from_sql_str(s: &str) -> Option<Self> {
                <$ty>::$parse(s)
            }
        }
        $crate::sql_enum::sql_impls!($ty);
    };
}

/// `ToSql` and `FromSql` for a type that implements [`SqlText`].
macro_rules! sql_impls {
    ($ty:ty) => {
        impl rusqlite::ToSql for $ty {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                $crate::sql_enum::to_sql(*self)
            }
        }
        impl rusqlite::types::FromSql for $ty {
            fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                $crate::sql_enum::from_sql(value)
            }
        }
    };
}

pub(crate) use {sql_impls, sql_text};

#[cfg(test)]
mod tests {
    use crate::outbox::JobStatus;
    use crate::worker::state::PauseKind;
    use crate::{Category, CategorySource};

    /// Writes `v` to a TEXT column, reads it back as `T`; then reads an unknown value.
    fn round_trip<T>(values: &[T])
    where
        T: rusqlite::ToSql + rusqlite::types::FromSql + PartialEq + std::fmt::Debug,
    {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v TEXT)").unwrap();
        for v in values {
            conn.execute("DELETE FROM t", []).unwrap();
            conn.execute("INSERT INTO t (v) VALUES (?1)", [v]).unwrap();
            let back: T = conn.query_row("SELECT v FROM t", [], |r| r.get(0)).unwrap();
            assert_eq!(&back, v);
        }
        conn.execute("UPDATE t SET v = 'no-such-value'", []).unwrap();
        let err = conn
            .query_row("SELECT v FROM t", [], |r| r.get::<_, T>(0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no-such-value") && err.contains("unknown"), "{err}");
    }

    #[test]
    fn every_stored_state_round_trips_and_unknown_values_are_errors() {
        round_trip(Category::ALL);
        round_trip(&[CategorySource::Ai, CategorySource::Builtin, CategorySource::User]);
        round_trip(&[
            JobStatus::Pending,
            JobStatus::Processing,
            JobStatus::Completed,
            JobStatus::Failed,
        ]);
        round_trip(&[PauseKind::Offline, PauseKind::RateLimited, PauseKind::NeedsUser]);
    }

    /// One name per value, the same in the database, in JSON and for `parse`.
    fn one_name<T>(values: &[T], as_str: fn(&T) -> &'static str)
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        for v in values {
            let json = serde_json::to_value(v).unwrap();
            assert_eq!(json, serde_json::json!(as_str(v)), "{v:?}");
            assert_eq!(&serde_json::from_value::<T>(json).unwrap(), v);
        }
        assert!(serde_json::from_value::<T>(serde_json::json!("no-such-value")).is_err());
    }

    #[test]
    fn named_values_serialise_by_their_one_name() {
        one_name(&[CategorySource::Ai, CategorySource::User], |v| v.as_str());
        one_name(&[JobStatus::Pending, JobStatus::Failed], |v| v.as_str());
        one_name(&[PauseKind::RateLimited, PauseKind::NeedsUser], |v| v.as_str());
        one_name(&crate::Confidence::ALL, |v| v.as_str());
        one_name(&crate::error::ErrorKind::ALL, |v| v.as_str());
        assert_eq!(
            crate::error::ErrorKind::parse("needs_user"),
            Some(crate::error::ErrorKind::NeedsUser)
        );
    }
}
