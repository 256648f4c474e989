//! Who wins when devices disagree: the rules of conflict, in one place, each a pure function
//! with a property test (docs/SYNC.md "Conflicts"). Everything that orders changes across
//! devices asks here: the clock this device stamps its changes with ([`super::local`]), the
//! registers other devices' changes are offered to, and whether a forgetting removes a visit
//! (`sync::apply`, `forget::steps`).
//!
//! **The hybrid clock.** A change is stamped with an `i64`: wall milliseconds << 16 | a counter.
//! It never goes backwards on a device, and it is bounded: the wall time it reads is kept within
//! the years 1970 to ~4200 ([`MAX_WALL_MS`]) so that no clock saturates, and a clock seen in
//! another device's operation moves this device's clock at most to a day past its own wall
//! clock ([`FUTURE_BOUND_MS`]): a device whose clock says 9999 cannot drag the others' clocks
//! there (they would all tie from then on). An operation is applied with the clock it carries,
//! clamped to [`MAX_STAMP`] alone: a clamp by each receiver's own clock would order the same two
//! changes differently on different devices, and they would never converge.
//!
//! **Last writer wins**, for the registers (a user's or an AI's category, blocking, an
//! exclusion, a title, a device's name): the greater (clock, device id) wins, on every device,
//! whatever the order the writes arrive in. A change made here over a register whose winner is
//! stamped past this device's clock (another device's clock runs ahead) is stamped just past
//! that winner ([`stamp_past`]): what a person changes after seeing a value wins over it, and
//! only that change's stamp moves, not the device's clock.
//!
//! **Deletions win.** A website's forgetting removes every visit of it stamped before the
//! forgetting, whether the visit arrives before the forgetting (deleted) or after (dropped)
//! ([`forgets`]); a forgetting made here is stamped past every visit of the website here, and a
//! visit recorded here past every forgetting of its website here, so what a person saw
//! forgotten stays forgotten everywhere, and what they record after it stays.

use uuid::Uuid;

/// Bits of the counter below the wall milliseconds.
const COUNTER_BITS: u32 = 16;
/// The latest wall time a clock reads (milliseconds since 1970, in the year ~4200): a later wall
/// clock reads as this. Its stamps leave a quarter of the `i64` range unused above them.
pub const MAX_WALL_MS: i64 = (1 << 46) - 1;
/// The greatest stamp an operation is applied with (a greater one, which only a broken or
/// hostile device sends, is read as this): far above every clock, below `i64::MAX` so that
/// [`stamp_past`] never saturates into ties.
pub const MAX_STAMP: i64 = 3 << 61;
/// How far past its own wall clock another device's clock may move this device's clock.
pub const FUTURE_BOUND_MS: i64 = 24 * 60 * 60 * 1000;

/// The stamp of wall time `wall_ms` with a zero counter (the wall kept within 1970..=[`MAX_WALL_MS`]).
pub fn stamp_of_wall(wall_ms: i64) -> i64 {
    wall_ms.clamp(0, MAX_WALL_MS) << COUNTER_BITS
}

/// Wall milliseconds of a stamp.
pub fn wall_of_stamp(hlc: i64) -> i64 {
    hlc >> COUNTER_BITS
}

/// The highest clock a device whose wall clock reads `wall_ms` may hold: the end of the
/// millisecond a day ahead.
pub fn ceiling(wall_ms: i64) -> i64 {
    stamp_of_wall(wall_ms.saturating_add(FUTURE_BOUND_MS)) | ((1 << COUNTER_BITS) - 1)
}

/// The next clock value after `last` at wall time `wall_ms`: past `last`, at least the wall
/// time, and never past [`ceiling`] (a clock that got there counts no further until the wall
/// clock catches up; [`stamp_past`] keeps each register's order meanwhile).
pub fn next_hlc(last: i64, wall_ms: i64) -> i64 {
    stamp_of_wall(wall_ms).max(last.saturating_add(1).min(ceiling(wall_ms)))
}

/// This device's clock after it saw `seen` in another device's operation: moved past it, but
/// at most to [`ceiling`] of its own wall clock (never adopted beyond).
pub fn observe(last: i64, seen: i64, wall_ms: i64) -> i64 {
    last.max(seen.min(ceiling(wall_ms)))
}

/// The stamp an operation of another device is applied with: its own, at most [`MAX_STAMP`].
/// The same on every device, so every device orders the same changes the same way.
pub fn received(hlc: i64) -> i64 {
    hlc.min(MAX_STAMP)
}

/// The stamp of a change made here with clock `own` over what it replaces, stamped `known` (a
/// register's winner, the last forgetting of a website, the last visit of a website): past it,
/// so the change wins over what the person saw, at most [`MAX_STAMP`].
pub fn stamp_past(own: i64, known: Option<i64>) -> i64 {
    match known {
        Some(k) if k >= own => k.saturating_add(1).min(MAX_STAMP).max(own),
        _ => own,
    }
}

/// Last writer wins: true if a write stamped `new` by device `new_device` replaces the winner
/// so far (`old`, by `old_device`). A strict total order: of two different writes exactly one
/// wins, so every device keeps the same winner whatever order the writes arrive in.
pub fn wins((new, new_device): (i64, Uuid), (old, old_device): (i64, Uuid)) -> bool {
    (new, new_device) > (old, old_device)
}

/// The stamp of a website's forgetting as its tombstone keeps it: its clock, or, for a
/// forgetting made before this device was linked (no clock), the stamp of its time
/// (`forgotten_at`, microseconds).
pub fn tombstone_stamp(sync_hlc: Option<i64>, forgotten_at_micros: i64) -> i64 {
    sync_hlc.unwrap_or_else(|| stamp_of_wall(forgotten_at_micros / 1000))
}

/// Deletions win: true if a forgetting stamped `forgetting` removes a visit stamped `visit`
/// (one recorded before it). The one test for a visit already here (deleted) and one that
/// arrives after the forgetting (dropped).
pub fn forgets(forgetting: i64, visit: i64) -> bool {
    visit < forgetting
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Wall clocks from before 1970 to past the year 9999.
    fn wall() -> impl Strategy<Value = i64> {
        prop_oneof![
            -10_000_000_000_000i64..0,
            0i64..253_402_300_800_000,
            253_402_300_800_000i64..i64::MAX / 2,
            Just(i64::MAX),
            Just(i64::MIN),
        ]
    }

    fn stamp() -> impl Strategy<Value = i64> {
        prop_oneof![0..MAX_STAMP, Just(i64::MAX), Just(MAX_STAMP), any::<i64>()]
    }

    #[test]
    fn the_clock_never_goes_back_and_counts_within_a_millisecond() {
        let a = next_hlc(0, 1_000);
        assert_eq!(wall_of_stamp(a), 1_000);
        let b = next_hlc(a, 1_000);
        assert_eq!(b, a + 1);
        // A wall clock set back does not move the clock back.
        let c = next_hlc(b, 10);
        assert_eq!(c, b + 1);
        assert!(next_hlc(c, 2_000) > c);
        // The year 9999 is read as the year ~4200: no saturation.
        let far = next_hlc(0, 253_402_300_799_000);
        assert_eq!(wall_of_stamp(far), MAX_WALL_MS);
        assert!(next_hlc(far, 253_402_300_799_000) > far);
    }

    proptest! {
        #[test]
        fn the_clock_moves_forward_and_stays_within_a_day_of_the_wall(last in stamp(), wall_ms in wall()) {
            let next = next_hlc(last, wall_ms);
            prop_assert!(next >= stamp_of_wall(wall_ms));
            prop_assert!(next <= ceiling(wall_ms), "never a day past the wall clock");
            if last < ceiling(wall_ms) {
                prop_assert!(next > last, "a clock below its ceiling moves forward");
            }
            prop_assert!(next < MAX_STAMP);
        }

        #[test]
        fn a_clock_seen_is_followed_up_to_a_day_ahead_and_never_adopted_beyond(
            last in stamp(), seen in stamp(), wall_ms in wall()
        ) {
            let after = observe(last, seen, wall_ms);
            prop_assert!(after >= last, "never back");
            prop_assert!(after <= last.max(ceiling(wall_ms)), "never adopted past the bound");
            if seen <= ceiling(wall_ms) {
                prop_assert!(after >= seen, "a clock within the bound is followed");
            }
            // The next change here is still within a day of the wall clock.
            prop_assert!(next_hlc(after.min(ceiling(wall_ms)), wall_ms) <= ceiling(wall_ms));
        }

        #[test]
        fn received_stamps_are_the_same_on_every_device(h in stamp()) {
            prop_assert_eq!(received(received(h)), received(h));
            prop_assert!(received(h) <= MAX_STAMP);
            prop_assert!(h > MAX_STAMP || received(h) == h);
        }

        #[test]
        fn a_change_made_here_is_stamped_past_what_it_replaces(own in stamp(), known in proptest::option::of(stamp())) {
            let own = received(own);
            let known = known.map(received);
            let s = stamp_past(own, known);
            prop_assert!(s >= own);
            prop_assert!(s <= MAX_STAMP);
            if let Some(k) = known {
                if k < MAX_STAMP {
                    prop_assert!(s > k, "wins over what it replaces");
                }
            }
        }

        #[test]
        fn last_writer_wins_is_a_total_order_so_any_arrival_order_keeps_the_same_winner(
            writes in proptest::collection::vec((stamp(), 0u8..4), 1..12),
            seed in any::<u64>(),
        ) {
            let writes: Vec<(i64, Uuid)> = writes
                .into_iter()
                .map(|(h, d)| (received(h), Uuid::from_u128(u128::from(d))))
                .collect();
            for a in &writes {
                for b in &writes {
                    prop_assert!(!(wins(*a, *b) && wins(*b, *a)), "antisymmetric");
                    prop_assert!(a == b || wins(*a, *b) || wins(*b, *a), "total");
                }
            }
            let fold = |order: &[(i64, Uuid)]| {
                order.iter().skip(1).fold(order[0], |w, x| if wins(*x, w) { *x } else { w })
            };
            let mut shuffled = writes.clone();
            let mut rng = seed;
            for i in (1..shuffled.len()).rev() {
                rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                shuffled.swap(i, usize::try_from(rng >> 33).unwrap() % (i + 1));
            }
            prop_assert_eq!(fold(&writes), fold(&shuffled));
        }

        #[test]
        fn a_forgetting_removes_the_same_visits_whichever_arrives_first(forgetting in stamp(), visit in stamp()) {
            // Here first, then the forgetting deletes it; or the forgetting first, then the visit
            // is dropped: the same answer, and a visit stamped after the forgetting stays.
            let deleted = forgets(forgetting, visit);
            let dropped = forgets(forgetting, visit);
            prop_assert_eq!(deleted, dropped);
            prop_assert_eq!(deleted, visit < forgetting);
            // A visit recorded here after the forgetting was seen here stays everywhere.
            let forgetting = received(forgetting);
            prop_assert!(!forgets(forgetting, stamp_past(received(visit), Some(forgetting))));
        }

        #[test]
        fn a_tombstone_without_a_clock_stands_for_its_time(at in -1_000_000_000_000i64..1_000_000_000_000_000) {
            prop_assert_eq!(tombstone_stamp(Some(7), at), 7);
            prop_assert_eq!(tombstone_stamp(None, at), stamp_of_wall(at / 1000));
        }
    }
}
