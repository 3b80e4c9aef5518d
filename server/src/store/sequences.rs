//! The id counters of the tables whose ids are never given twice (`AUTOINCREMENT`: messages,
//! jobs, conversations, visitors …; SQLite keeps each one's highest id in `sqlite_sequence`).
//! A restored file's counters are as old as the file: after a rollback, or a restore that lost
//! the last moments, the next ids would be ones the abandoned copy already handed out (a job id
//! is a webhook's `webhook-id`; a message id a widget's `last_id`). `porch raise-ids` moves them
//! past those ids.

use rusqlite::{Connection, params};

use super::Error;

/// One counter moved: the table, its highest id before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaisedCounter {
    pub table: String,
    pub from: i64,
    pub to: i64,
}

/// Every table's counter in `conn`, including a table whose counter does not exist yet (no row
/// ever inserted) as 0, by table name.
pub fn id_counters(conn: &Connection) -> Result<Vec<(String, i64)>, Error> {
    // `sqlite_sequence` is created with the first AUTOINCREMENT table; a file without one has
    // no counters at all.
    let has_counters: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_sequence')",
        [],
        |r| r.get(0),
    )?;
    if !has_counters {
        return Ok(Vec::new());
    }
    let counters = conn
        .prepare(
            "SELECT t.name, coalesce((SELECT max(q.seq) FROM sqlite_sequence q WHERE q.name = t.name), 0) \
             FROM sqlite_schema t \
             WHERE t.type = 'table' AND t.sql LIKE '%AUTOINCREMENT%' ORDER BY t.name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(counters)
}

/// Raises each counter of `conn` to at least `wanted(table, current)`, in one transaction, and
/// returns those that moved. Tables `wanted` answers `None` for are left as they are.
pub fn raise_id_counters(
    conn: &mut Connection,
    wanted: impl Fn(&str, i64) -> Option<i64>,
) -> Result<Vec<RaisedCounter>, Error> {
    let tx = conn.transaction()?;
    let mut raised = Vec::new();
    for (table, from) in id_counters(&tx)? {
        let Some(to) = wanted(&table, from).filter(|&to| to > from) else {
            continue;
        };
        // `sqlite_sequence` has no key on `name`: update the row, or add the first one.
        let updated = tx.execute(
            "UPDATE sqlite_sequence SET seq = ?2 WHERE name = ?1",
            params![table, to],
        )?;
        if updated == 0 {
            tx.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES (?1, ?2)",
                params![table, to],
            )?;
        }
        raised.push(RaisedCounter { table, from, to });
    }
    tx.commit()?;
    Ok(raised)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(rows: i64) -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        conn.execute_batch(
            "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, x); \
             CREATE TABLE later (id INTEGER PRIMARY KEY AUTOINCREMENT, x); \
             CREATE TABLE plain (id INTEGER PRIMARY KEY, x);",
        )
        .expect("schema");
        for _ in 0..rows {
            conn.execute("INSERT INTO jobs (x) VALUES (1)", [])
                .expect("row");
        }
        conn
    }

    #[test]
    fn counters_move_past_another_copy_s_and_never_back() {
        let abandoned = database(50);
        let mut restored = database(20);
        let past = id_counters(&abandoned).expect("counters");
        assert_eq!(past, [("jobs".to_owned(), 50), ("later".to_owned(), 0)]);
        let raised = raise_id_counters(&mut restored, |table, _| {
            past.iter().find(|(t, _)| t == table).map(|(_, seq)| *seq)
        })
        .expect("raise");
        assert_eq!(
            raised,
            [RaisedCounter {
                table: "jobs".to_owned(),
                from: 20,
                to: 50
            }]
        );
        restored
            .execute("INSERT INTO jobs (x) VALUES (2)", [])
            .expect("row");
        assert_eq!(
            restored.last_insert_rowid(),
            51,
            "never an id the other copy gave"
        );

        // By a margin: also a counter no row has used yet; lower values change nothing.
        let raised = raise_id_counters(&mut restored, |_, seq| Some(seq + 1000)).expect("raise");
        assert_eq!(raised.len(), 2, "{raised:?}");
        restored
            .execute("INSERT INTO later (x) VALUES (1)", [])
            .expect("row");
        assert_eq!(restored.last_insert_rowid(), 1001);
        assert!(
            raise_id_counters(&mut restored, |_, _| Some(3))
                .expect("raise")
                .is_empty()
        );
    }
}
