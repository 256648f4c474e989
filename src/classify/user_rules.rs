//! The user's own categories as the built-in rules use them: a category the user set for a
//! domain answers for that domain and every name under it (`example.com` → `docs.example.com`),
//! and for the same site name under other endings (`kayak.com` → `kayak.de`), as the bundled map
//! does. Only names of at least [`MIN_NAME_LEN`] letters that the user gave one category count
//! across endings.
//!
//! This is a snapshot; the worker keeps it current with the `user_categories_version` counter
//! (see `crate::worker`), so a category set while it runs reaches the next website it sees.

use std::collections::HashMap;

use super::hints;
use crate::category::Category;

/// Shorter site names are too likely to be different sites under different endings.
pub const MIN_NAME_LEN: usize = 5;

/// A snapshot of the user's own categories.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserCategories {
    exact: HashMap<String, Category>,
    names: HashMap<String, Category>,
}

impl UserCategories {
    /// The user's categories, `domain → category`.
    pub fn new(exact: HashMap<String, Category>) -> UserCategories {
        let names = names_of(exact.iter().map(|(d, c)| (d.as_str(), *c)));
        UserCategories { exact, names }
    }

    /// The category the user set for exactly `domain`.
    pub fn exact(&self, domain: &str) -> Option<Category> {
        self.exact.get(domain).copied()
    }

    /// The category the user gave the site called `name` (under any ending), if one.
    pub fn by_name(&self, name: &str) -> Option<Category> {
        self.names.get(name).copied()
    }

    /// Number of domains the user categorised.
    pub fn len(&self) -> usize {
        self.exact.len()
    }

    /// True if the user categorised nothing.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }
}

/// Site names (`kayak` of `kayak.com`) of at least [`MIN_NAME_LEN`] letters that `domains` give
/// one category; a name given two categories says nothing.
pub fn names_of<'a>(domains: impl Iterator<Item = (&'a str, Category)>) -> HashMap<String, Category> {
    let mut names: HashMap<&str, Option<Category>> = HashMap::new();
    for (domain, category) in domains {
        let labels: Vec<&str> = domain.split('.').collect();
        if let [name] = *hints::name_labels(&labels) {
            if name.len() >= MIN_NAME_LEN {
                let entry = names.entry(name).or_insert(Some(category));
                if *entry != Some(category) {
                    *entry = None;
                }
            }
        }
    }
    names
        .into_iter()
        .filter_map(|(n, c)| Some((n.to_owned(), c?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_across_endings_only_when_long_and_unambiguous() {
        let u = UserCategories::new(HashMap::from([
            ("kayak.com".to_owned(), Category::Shopping),
            ("bbc.co.uk".to_owned(), Category::News),
            ("twosite.example".to_owned(), Category::Games),
            ("twosite.test".to_owned(), Category::News),
            ("docs.longname.example".to_owned(), Category::DevTech),
        ]));
        assert_eq!(u.exact("kayak.com"), Some(Category::Shopping));
        assert_eq!(u.by_name("kayak"), Some(Category::Shopping));
        assert_eq!(u.by_name("bbc"), None, "too short");
        assert_eq!(u.by_name("twosite"), None, "two categories for one name");
        assert_eq!(u.by_name("longname"), None, "a subdomain names no site");
        assert_eq!(u.len(), 5);
    }
}
