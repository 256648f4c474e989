//! The worker's local side: built-in categories at once, whatever the remote provider is doing.
//!
//! [`LocalFirst`] does three things for a [`super::Worker`]:
//! - the **local pass** ([`LocalFirst::pass`]): every website without a category (or without a
//!   confidence) gets the built-in answer in one short transaction of up to
//!   [`provisional::LOCAL_BATCH`] websites, and its job is completed if no remote provider needs
//!   to see it (the built-in provider, a private or excluded host, a certain answer). It runs at
//!   the start of every tick and, from [`LocalFirst::run`], on its own every
//!   [`LOCAL_INTERVAL`] or when this process records visits: also while the worker waits on a
//!   slow call or sits out an offline, rate-limit or needs-you pause;
//! - the **claim** ([`LocalFirst::claim`]): the outbox claim, with the same decision for each
//!   claimed job, so a job the pass has not seen yet is still answered locally when it can be;
//! - the user's categories **as they are now**: the `user_categories_version` counter is read
//!   (one row) and the categories reloaded only when it moved;
//! - the hosts the user keeps from remote providers on all their devices
//!   ([`crate::exclusions`]), read at every pass and claim (a short list), beside the classifier's
//!   own (the settings' exclusions and the private hosts): an excluded host's job is completed
//!   with the built-in answer and never handed to the remote provider.
//!
//! Nothing here waits for the network, and no connection is held across an await.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, Transaction};
use tokio::sync::{broadcast, watch};
use tracing::{debug, warn};

use crate::category::CategorySource;
use crate::classify::builtin::{self, Judgement, Rule, RuleOptions};
use crate::classify::model::features::TitleWords;
use crate::classify::user_rules::UserCategories;
use crate::classify::Classifier;
use crate::error::{Error, Result};
use crate::outbox::{ClaimPolicy, ClaimedJob};
use crate::provisional::{self, Judged, PassOutcome, LOCAL_BATCH};
use crate::store::{Change, Store};
use crate::time::Timestamp;
use crate::title_judging::{self, TITLE_BATCH};
use crate::websites;

/// Longest wait of the local pass between two looks: it runs as soon as visits or websites are
/// announced, by this process or another ([`crate::changes`]); this is the safety net.
pub const LOCAL_INTERVAL: Duration = Duration::from_secs(60);

/// Returns once visits or websites were announced (true if the channel is closed). Job and
/// worker changes do not bring new websites to judge.
async fn new_websites(rx: &mut broadcast::Receiver<Change>) -> bool {
    loop {
        match rx.recv().await {
            Ok(Change::Visits | Change::Websites) | Err(broadcast::error::RecvError::Lagged(_)) => {
                return false
            }
            Ok(_) => {}
            Err(broadcast::error::RecvError::Closed) => return true,
        }
    }
}

/// A snapshot of the user's categories and the counter value it was read at.
#[derive(Default)]
struct UserSnapshot {
    version: Option<i64>,
    categories: Arc<UserCategories>,
}

/// The worker's local side (see the module docs).
pub struct LocalFirst {
    classifier: Arc<dyn Classifier>,
    user: Mutex<UserSnapshot>,
    /// One pass at a time (the tick's and the loop's), so they never judge the same websites twice.
    pass_lock: Mutex<()>,
}

impl LocalFirst {
    /// The local side for a worker whose classifier is `classifier` (asked only which hosts it
    /// would send out, never to classify).
    pub fn new(classifier: Arc<dyn Classifier>) -> LocalFirst {
        LocalFirst {
            classifier,
            user: Mutex::new(UserSnapshot::default()),
            pass_lock: Mutex::new(()),
        }
    }

    /// The user's categories as they are now, and the counter value they were read at: one row
    /// read, and the categories reloaded only if the counter moved. Blocking.
    pub fn user_categories(&self, conn: &Connection) -> Result<(i64, Arc<UserCategories>)> {
        let version = provisional::get_user_categories_version(conn)?;
        let mut snap = self
            .user
            .lock()
            .map_err(|_| Error::Task("the user-categories snapshot is poisoned".into()))?;
        if snap.version != Some(version) {
            let categories = Arc::new(UserCategories::new(websites::list_user_categories(conn)?));
            debug!(version, count = categories.len(), "user categories read");
            *snap = UserSnapshot {
                version: Some(version),
                categories,
            };
        }
        Ok((version, snap.categories.clone()))
    }

    /// One local pass (see the module docs). Blocking. If the user changed a category between
    /// the judging and the write, nothing is written and the pass is done again.
    #[tracing::instrument(name = "local_pass", level = "debug", skip_all)]
    pub fn pass(&self, store: &Store) -> Result<PassOutcome> {
        let _one_at_a_time = self
            .pass_lock
            .lock()
            .map_err(|_| Error::Task("the local pass lock is poisoned".into()))?;
        // Decode the lists and the model (once per process) before any write lock is taken: the
        // claim judges under one too.
        crate::classify::builtin::warm();
        for _ in 0..3 {
            let sites = store.with_conn(|c| provisional::list_unjudged(c, LOCAL_BATCH))?;
            if sites.is_empty() {
                return Ok(PassOutcome::default());
            }
            let (version, user) = store.with_conn(|c| self.user_categories(c))?;
            let excluded = store.with_conn(crate::exclusions::load)?;
            let judged: Vec<Judged> = sites
                .into_iter()
                .map(|site| Judged {
                    judgement: builtin::judge(&site.domain, Some(&user), RuleOptions::default()),
                    asks_remote: !excluded.matches(&site.domain) && self.classifier.asks_remote(&site.domain),
                    site,
                })
                .collect();
            let now = store.now();
            let written = store.write_changes(|tx, changes| {
                if provisional::get_user_categories_version(tx)? != version {
                    return Ok(None);
                }
                let out = provisional::apply_pass(tx, &judged, now)?;
                if out.judged > 0 {
                    *changes |= Change::Websites;
                }
                if out.completed > 0 {
                    *changes |= Change::Outbox;
                }
                Ok(Some(out))
            })?;
            if let Some(out) = written {
                if out.judged > 0 {
                    debug!(
                        judged = out.judged,
                        completed = out.completed,
                        provisional = out.provisional,
                        "built-in categories written"
                    );
                }
                return Ok(out);
            }
        }
        Ok(PassOutcome::default())
    }

    /// Judges again, from the titles and paths of their pages, the websites whose built-in answer
    /// no list gave once they have a few titled visits, and again when many more have come
    /// ([`title_judging`]). Blocking. Titles are read here and given to the learned model only:
    /// they never reach a classifier that could send them anywhere. Only a `builtin` category is
    /// replaced, and an answer from titles is at most `medium`, so no job changes state.
    pub fn title_pass(&self, store: &Store) -> Result<usize> {
        let _one_at_a_time = self
            .pass_lock
            .lock()
            .map_err(|_| Error::Task("the local pass lock is poisoned".into()))?;
        let due = store.with_conn(|c| title_judging::list_due(c, TITLE_BATCH))?;
        if due.is_empty() {
            return Ok(0);
        }
        crate::classify::builtin::warm();
        let (version, user) = store.with_conn(|c| self.user_categories(c))?;
        let mut judged: Vec<(title_judging::Due, i64, Option<Judgement>)> = Vec::with_capacity(due.len());
        for site in due {
            let pages = store.with_conn(|c| title_judging::list_pages(c, site.website_id, &site.domain))?;
            let titled = i64::try_from(pages.iter().filter(|(t, _)| t.is_some()).count()).unwrap_or(i64::MAX);
            let judgement = (titled >= title_judging::FIRST_JUDGING).then(|| {
                let mut words = TitleWords::new();
                for (title, url) in &pages {
                    if let Some(t) = title {
                        words.add(t);
                    }
                    words.add(&crate::search::IndexedText::new(&site.domain, url, None).url);
                }
                builtin::judge_with_titles(&site.domain, Some(&user), RuleOptions::default(), Some(&words))
            });
            // Only an answer the titles gave replaces the one from the name.
            let judgement = judgement.filter(|j| j.rule == Rule::ModelTitles);
            judged.push((site, titled, judgement));
        }
        let now = store.now();
        let written = store.write_changes(|tx, changes| {
            if provisional::get_user_categories_version(tx)? != version {
                return Ok(None);
            }
            let mut n = 0;
            for (site, titled, judgement) in &judged {
                if let Some(j) = judgement {
                    if provisional::write_classifier_category(
                        tx,
                        site.website_id,
                        j.category,
                        CategorySource::Builtin,
                        j.confidence,
                        Some(j.rule.as_str()),
                        now,
                    )? {
                        n += 1;
                        *changes |= Change::Websites;
                    }
                }
                title_judging::reschedule(tx, site.website_id, *titled)?;
            }
            Ok(Some(n))
        })?;
        let n = written.unwrap_or(0);
        if n > 0 {
            debug!(retitled = n, "built-in categories judged again from page titles");
        }
        Ok(n)
    }

    /// Claims jobs in the caller's `BEGIN IMMEDIATE` transaction and answers locally those that
    /// need no remote provider (see [`provisional::claim_jobs_local_first`]).
    pub fn claim(
        &self,
        tx: &Transaction<'_>,
        now: Timestamp,
        policy: ClaimPolicy,
    ) -> Result<Vec<ClaimedJob>> {
        let (_, user) = self.user_categories(tx)?;
        let excluded = crate::exclusions::load(tx)?;
        let classifier = &self.classifier;
        provisional::claim_jobs_local_first(tx, now, policy, &user, &|d| {
            !excluded.matches(d) && classifier.asks_remote(d)
        })
    }

    /// Runs the local pass on tokio's blocking pool; a failure is logged, never fatal.
    pub async fn pass_async(self: &Arc<Self>, store: &Store) -> PassOutcome {
        let me = self.clone();
        let pass = move |s: &Store| -> Result<PassOutcome> {
            let mut out = me.pass(s)?;
            out.retitled = me.title_pass(s)?;
            Ok(out)
        };
        match store.run(pass).await {
            Ok(out) => out,
            Err(e) => {
                warn!(error = %e, "local classification pass failed; will try again");
                PassOutcome::default()
            }
        }
    }

    /// Runs local passes on tokio's blocking pool until one finds less than a full batch (at most
    /// `max_passes`): the tick calls this before its claim, so that the claim finds the websites
    /// judged.
    pub async fn catch_up(self: &Arc<Self>, store: &Store, max_passes: usize) {
        for _ in 0..max_passes {
            if self.pass_async(store).await.judged < LOCAL_BATCH {
                break;
            }
        }
    }

    /// Runs the local pass until `stop` turns true: at once again after a full batch, else as
    /// soon as visits or websites are announced (by any process), at the latest after
    /// [`LOCAL_INTERVAL`].
    pub async fn run(self: Arc<Self>, store: Store, mut stop: watch::Receiver<bool>) {
        let mut changes = store.subscribe();
        loop {
            if *stop.borrow() {
                break;
            }
            let out = self.pass_async(&store).await;
            if out.judged >= LOCAL_BATCH || out.retitled >= TITLE_BATCH {
                tokio::task::yield_now().await;
                continue;
            }
            let closed = tokio::select! {
                _ = tokio::time::sleep(LOCAL_INTERVAL) => false,
                r = new_websites(&mut changes) => r,
                _ = stop.wait_for(|s| *s) => break,
            };
            if closed {
                // No sender left (cannot happen while the store lives): poll on the timer only.
                changes = store.subscribe();
                tokio::time::sleep(LOCAL_INTERVAL).await;
            }
        }
    }
}
