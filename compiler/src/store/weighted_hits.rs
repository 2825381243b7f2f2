//! `kc_weighted_hits`, an FTS5 auxiliary function: a matching row's occurrences of the query, each weighted by
//! its column's argument, which is what FTS5's `bm25()` sums as the row's term frequency. `bm25()` also reads
//! the row's size from a b-tree for every match (a quarter of the server's CPU per search on rust-rfcs); a
//! server's search cache keeps the sizes it read and computes BM25 itself from this frequency
//! (`retrieval/search/pool.rs`), bit for bit as `bm25()` does.
//!
//! FTS5 takes auxiliary functions only through its C API (<https://sqlite.org/fts5.html#extending_fts5>), which
//! rusqlite does not wrap: the two functions below are the project's only FFI into SQLite.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use rusqlite::{Connection, ffi};

/// Registers `kc_weighted_hits(table, weight, …)` on `conn`. Registering again replaces it, harmlessly.
pub fn register_weighted_hits(conn: &Connection) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    // SAFETY: `api` is the connection's FTS5 API, which lives as long as the connection; the name is copied by
    // FTS5, the function is a plain `extern "C"` function and takes no user data to free.
    #[allow(unsafe_code)]
    let code = unsafe {
        let create = (*api).xCreateFunction.ok_or_else(|| failure(ffi::SQLITE_MISUSE, "FTS5 cannot add functions"))?;
        create(api, c"kc_weighted_hits".as_ptr(), null_mut(), Some(weighted_hits), None)
    };
    match code {
        ffi::SQLITE_OK => Ok(()),
        code => Err(failure(code, "FTS5 refused kc_weighted_hits")),
    }
}

/// The connection's FTS5 API, handed out by `SELECT fts5(?1)` with a pointer bound under the type
/// `fts5_api_ptr`, as FTS5's documentation prescribes.
fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = null_mut();
    // SAFETY: the statement is prepared on the connection's own handle, finalized before returning, and the
    // bound pointer (`api`, written by FTS5 during the step) outlives it.
    #[allow(unsafe_code)]
    let code = unsafe {
        let mut statement = null_mut();
        let code = ffi::sqlite3_prepare_v2(conn.handle(), c"SELECT fts5(?1)".as_ptr(), -1, &mut statement, null_mut());
        if code == ffi::SQLITE_OK {
            ffi::sqlite3_bind_pointer(statement, 1, (&raw mut api).cast::<c_void>(), c"fts5_api_ptr".as_ptr(), None);
            ffi::sqlite3_step(statement);
        }
        ffi::sqlite3_finalize(statement);
        code
    };
    if code != ffi::SQLITE_OK || api.is_null() {
        return Err(failure(code, "this SQLite has no FTS5 API"));
    }
    Ok(api)
}

/// The auxiliary function itself: the sum, over the current row's instances of the query's phrases, of the
/// argument given for the instance's column (1 for a column without one), in instance order, as `bm25()`
/// adds them.
#[allow(unsafe_code)]
unsafe extern "C" fn weighted_hits(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    context: *mut ffi::sqlite3_context,
    argument_count: c_int,
    arguments: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 calls this with its API and the cursor's context for the current row, and with
    // `argument_count` valid values at `arguments`, all valid for the duration of the call.
    unsafe {
        let (Some(instance_count), Some(instance)) = ((*api).xInstCount, (*api).xInst) else {
            ffi::sqlite3_result_error_code(context, ffi::SQLITE_MISUSE);
            return;
        };
        let mut count: c_int = 0;
        let mut code = instance_count(fts, &mut count);
        let mut frequency = 0.0_f64;
        let mut at = 0;
        while code == ffi::SQLITE_OK && at < count {
            let (mut phrase, mut column, mut offset): (c_int, c_int, c_int) = (0, 0, 0);
            code = instance(fts, at, &mut phrase, &mut column, &mut offset);
            if code == ffi::SQLITE_OK {
                frequency += if argument_count > column && column >= 0 {
                    ffi::sqlite3_value_double(*arguments.add(column as usize))
                } else {
                    1.0
                };
            }
            at += 1;
        }
        if code == ffi::SQLITE_OK {
            ffi::sqlite3_result_double(context, frequency);
        } else {
            ffi::sqlite3_result_error_code(context, code);
        }
    }
}

fn failure(code: c_int, message: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), Some(message.to_string()))
}
