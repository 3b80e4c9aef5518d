//! Keyset paging of the API's lists (`limit`, `before`, `next`): one more row than asked is read,
//! which says whether a next page exists without counting anything.

use super::ApiError;

/// The page size asked for: `max` when left out, else 1 to `max`.
pub fn limit(raw: Option<&str>, max: u32) -> Result<u32, ApiError> {
    match raw {
        None => Ok(max),
        Some(raw) => raw
            .parse()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| ApiError::invalid(format!("limit must be 1 to {max}."))),
    }
}

/// How many rows to read for a page of `limit`.
pub fn rows_to_read(limit: u32) -> u32 {
    limit + 1
}

/// The page of `limit` out of `rows` (read with [`rows_to_read`]) and its `next`: the cursor of
/// its last row when more follow, else `None`.
pub fn page<T>(
    mut rows: Vec<T>,
    limit: u32,
    cursor: impl Fn(&T) -> String,
) -> (Vec<T>, Option<String>) {
    let has_more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = rows.last().filter(|_| has_more).map(cursor);
    (rows, next)
}
