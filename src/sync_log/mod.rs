//! The sync outbox: the operations this device's changes become, queued by the write paths
//! (`visits`, `time_spent`, `websites`, `blocked`, `forget`, `provisional`) in their own
//! transaction, and the clock and registers they are ordered by.
//!
//! It sits below the write paths and below [`crate::sync`], and names nothing above the ground
//! floor (`error`, `ids`): a write path queues its change without knowing how sync pushes it,
//! and `sync` pushes, pulls and applies through the write paths without them reaching back.
//!
//! - [`local`]: every change is queued as an operation in the transaction of the change itself;
//!   the hybrid logical clock; the last-writer registers; the global ids of visits;
//! - [`ops`]: the operations and how a record carries them;
//! - [`conflict`]: who wins when devices disagree (the hybrid clock, last writer wins,
//!   deletions win), each rule a pure function with a property test.

pub mod conflict;
pub mod local;
pub mod ops;
