//! Names of values, written once: [`named!`] gives an enum its `as_str`, `parse` and serde
//! (de)serialisation from one list, for the states the database stores, the error kinds the UI
//! and scripts branch on, and every other enum shown or read by name. Names nothing else in the
//! crate, so every module may use it.

/// An enum's names, written once: `named!(JobStatus { Pending = "PENDING", ... });` gives it
/// `as_str` and `parse` and serialises it by those names (serde), so the stored value, the JSON
/// the CLI and the app print and what is parsed back can never differ. A variant left out of
/// the list does not compile (`as_str` matches every one).
macro_rules! named {
    ($ty:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        impl $ty {
            /// The value's name: what is stored, printed and sent.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $text,)+
                }
            }

            /// The value of a name, `None` for any other text.
            pub fn parse(s: &str) -> Option<$ty> {
                match s {
                    $($text => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                <$ty>::parse(&s).ok_or_else(|| serde::de::Error::unknown_variant(&s, &[$($text),+]))
            }
        }
    };
}

pub(crate) use named;
