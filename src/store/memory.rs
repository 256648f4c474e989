//! SQLite's memory comes from mimalloc, not the C library's `malloc`.
//!
//! SQLite allocates and frees small blocks all the time (records, cursors, FTS5's hash entries,
//! JSON blobs): glibc's `malloc` and `free` were 11 % of an import's CPU (`_int_malloc`,
//! `_int_free`, `malloc_consolidate`, ...). With mimalloc under Rust alone an import read about
//! 3 % more visits a second, under Rust and SQLite 5-8 % (docs/BENCHMARKS.md, "Import").
//!
//! The only unsafe code of the workspace (its lint denies it elsewhere): SQLite's allocator is a
//! C structure of C functions, set through `sqlite3_config`, which rusqlite does not wrap.
//!
//! SQLite takes its allocator only before it starts (`sqlite3_config` before
//! `sqlite3_initialize`, which the first connection of the process calls): [`use_mimalloc`] runs
//! once, at the top of [`crate::store::Store::open_with`], which every binary here calls before any
//! other SQLite work. Had something else started SQLite first, it keeps the C library's allocator
//! (said at `debug`) and nothing else changes: every block is then freed by the allocator that
//! made it, as SQLite frees only through the methods it started with.
//!
//! The Rust side's allocator is each binary's choice (`#[global_allocator]` in the CLI, the app
//! and the import benchmark).

#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::sync::Once;

use libmimalloc_sys as mi;
use rusqlite::ffi;

/// Sets SQLite's allocator to mimalloc, once per process, if SQLite has not started yet.
pub(crate) fn use_mimalloc() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(malloc),
            xFree: Some(free),
            xRealloc: Some(realloc),
            xSize: Some(size),
            xRoundup: Some(roundup),
            xInit: Some(init),
            xShutdown: Some(shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: functions of the signatures SQLite expects; sqlite3_config copies the structure
        // before it returns. SQLite refuses (SQLITE_MISUSE) once it has started, changing nothing.
        let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &raw const methods) };
        if rc != ffi::SQLITE_OK {
            tracing::debug!(
                rc,
                "SQLite had started before the store opened: it keeps the C library's allocator"
            );
        }
    });
}

// SQLite asks for 8-byte alignment; mimalloc gives at least 16. SQLite never passes a size below
// 1 or a null pointer to these (its own wrappers handle both).

unsafe extern "C" fn malloc(n: c_int) -> *mut c_void {
    // SAFETY: a plain allocation; SQLite checks for null.
    unsafe { mi::mi_malloc(usize::try_from(n).unwrap_or(0)) }
}

unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: `p` came from `malloc` or `realloc` above (SQLite frees only what it allocated).
    unsafe { mi::mi_free(p) }
}

unsafe extern "C" fn realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    // SAFETY: as `free`; SQLite keeps `p` if this returns null.
    unsafe { mi::mi_realloc(p, usize::try_from(n).unwrap_or(0)) }
}

unsafe extern "C" fn size(p: *mut c_void) -> c_int {
    // SAFETY: `p` is a live block of ours.
    let n = unsafe { mi::mi_usable_size(p) };
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn roundup(n: c_int) -> c_int {
    // SAFETY: a pure function of the size.
    let good = unsafe { mi::mi_good_size(usize::try_from(n).unwrap_or(0)) };
    c_int::try_from(good).unwrap_or(n)
}

unsafe extern "C" fn init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn shutdown(_: *mut c_void) {}

/// Whether a block SQLite allocates (`sqlite3_malloc`) and a block of this process's Rust
/// allocator lie in mimalloc's heap: for the tests.
#[cfg(test)]
pub(crate) fn blocks_in_mimalloc() -> (bool, bool) {
    let rust = vec![0u8; 1000];
    // SAFETY: a block allocated and freed through SQLite's own functions; mimalloc's check only
    // reads its own bookkeeping of its regions.
    unsafe {
        let p = ffi::sqlite3_malloc(1000);
        let sqlite = mi::mi_is_in_heap_region(p.cast_const());
        ffi::sqlite3_free(p);
        (sqlite, mi::mi_is_in_heap_region(rust.as_ptr().cast()))
    }
}
