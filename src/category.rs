//! The category taxonomy and where a website's category came from.
//!
//! Categories are stable ids stored as TEXT; the readable name is for display only. An answer
//! outside this list is never stored.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

macro_rules! categories {
    ($($variant:ident => $id:literal, $name:literal;)*) => {
        /// A website category: one of a fixed list of stable ids.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Category { $(#[doc = $name] $variant,)* }

        impl Category {
            /// Every category, in display order (a new one is added at the end: see the list).
            pub const ALL: &'static [Category] = &[$(Category::$variant,)*];

            /// The stable id stored in the database and used by classifiers.
            pub fn id(self) -> &'static str {
                match self { $(Category::$variant => $id,)* }
            }

            /// The name shown to people.
            pub fn name(self) -> &'static str {
                match self { $(Category::$variant => $name,)* }
            }
        }

        impl crate::sql_enum::SqlText for Category {
            const WHAT: &'static str = "category";
            fn as_sql_str(self) -> &'static str { self.id() }
            fn from_sql_str(s: &str) -> Option<Self> {
                match s { $($id => Some(Category::$variant),)* _ => None }
            }
        }
        crate::sql_enum::sql_impls!(Category);

        impl FromStr for Category {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                match s.trim() {
                    $($id => Ok(Category::$variant),)*
                    other => Err(Error::UnknownCategory(crate::error::truncate_chars(other, 100))),
                }
            }
        }
    };
}

categories! {
    SearchReference => "search_reference", "Search & reference";
    Social => "social", "Social networks";
    Communication => "communication", "Email & chat";
    News => "news", "News";
    VideoStreaming => "video_streaming", "Video & streaming";
    MusicAudio => "music_audio", "Music & audio";
    Games => "games", "Games";
    Shopping => "shopping", "Shopping";
    Finance => "finance", "Finance & banking";
    Productivity => "productivity", "Productivity & office";
    DevTech => "dev_tech", "Development & technology";
    Education => "education", "Education";
    Jobs => "jobs", "Jobs & careers";
    TravelMaps => "travel_maps", "Travel & maps";
    Health => "health", "Health";
    GovernmentLaw => "government_law", "Government & law";
    Sports => "sports", "Sports";
    LifestyleHobbies => "lifestyle_hobbies", "Lifestyle & hobbies";
    Adult => "adult", "Adult";
    Gambling => "gambling", "Gambling";
    AdsInfra => "ads_infra", "Ads, tracking & infrastructure";
    Other => "other", "Other";
    // Added after `other`: the learned model and the open domain table store categories as
    // indices into `Category::ALL`, so a new category goes at the end.
    LocalDev => "local_dev", "Local & development";
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl serde::Serialize for Category {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl<'de> serde::Deserialize<'de> for Category {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Who set a website's category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CategorySource {
    /// An AI provider.
    Ai,
    /// The built-in offline classifier.
    Builtin,
    /// The user; never overwritten.
    User,
}

crate::names::named!(CategorySource {
    Ai = "ai",
    Builtin = "builtin",
    User = "user",
});

crate::sql_enum::sql_text!(CategorySource, "category source", as_str, parse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknowns_are_refused() {
        assert_eq!(Category::ALL.len(), 23);
        // The bundled model and open table index `ALL`: the first 22 keep their places.
        assert_eq!(Category::ALL[0], Category::SearchReference);
        assert_eq!(Category::ALL[20], Category::AdsInfra);
        assert_eq!(Category::ALL[21], Category::Other);
        assert_eq!(Category::ALL[22], Category::LocalDev);
        for c in Category::ALL {
            assert_eq!(c.id().parse::<Category>().unwrap(), *c);
        }
        assert!("Shopping".parse::<Category>().is_err());
        assert!("weather".parse::<Category>().is_err());
    }
}
