//! The day's log of artifact changes: owed inside the build's transaction, appended after its commit,
//! once.

use super::*;
use crate::store::{LOG_DUE, LOG_DUE_END};

/// Records, inside the build's transaction, the lines the build adds to the day's log
/// (`logs/YYYY/MM/DD.jsonl`, the day the build started, UTC): one per artifact change. The commit makes
/// them due, and [`complete_log`] appends them after it; a build killed in between leaves them due, and
/// the next build appends them, so the log gets each build's lines once.
pub fn record_log(
    conn: &Connection,
    run_id: &str,
    started_at: &str,
    changes: &[ArtifactChange],
) -> rusqlite::Result<()> {
    if changes.is_empty() {
        store::delete_meta(conn, LOG_DUE_END)?;
        return store::delete_meta(conn, LOG_DUE);
    }
    let (year, month, day) = (&started_at[0..4], &started_at[5..7], &started_at[8..10]);
    let mut lines = String::new();
    for change in changes {
        let record = serde_json::json!({
            "run_id": run_id,
            "at": started_at,
            "artifact": change.artifact,
            "kind": change.kind,
            "old_hash": change.old_hash,
            "new_hash": change.new_hash,
            "sources": change.sources,
        });
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    let file = format!("logs/{year}/{month}/{day}.jsonl");
    let last = lines[..lines.len() - 1].rfind('\n').map_or(lines.as_str(), |at| &lines[at + 1..]);
    store::set_meta(conn, LOG_DUE_END, &serde_json::json!({"file": file, "last": last}).to_string())?;
    store::set_meta(conn, LOG_DUE, &serde_json::json!({"file": file, "lines": lines}).to_string())
}

/// Appends what the last committed build owes the day's log, unless the log already ends with it. A
/// write cut short by a kill is finished, not repeated: the lines were appended last (one writer at a
/// time), so the file ends with some first part of them.
pub fn complete_log(conn: &Connection, output_dir: &Path) -> Result<(), std::io::Error> {
    if appended(conn, output_dir)? {
        return Ok(());
    }
    let due = store::meta(conn, LOG_DUE).map_err(std::io::Error::other)?;
    let Some(due) = due.and_then(|due| serde_json::from_str::<serde_json::Value>(&due).ok()) else { return Ok(()) };
    let (Some(file), Some(lines)) = (due["file"].as_str(), due["lines"].as_str()) else { return Ok(()) };
    let file = crate::store::paths::inside(output_dir, file)?;
    if !is_ours(&file)? {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("`{}` is not a log this tool wrote: its lines are not left in it; move it away", file.display()),
        ));
    }
    // Only the end of the day's log can hold them: read that much, not the whole day.
    let tail = read_tail(&file, lines.len()).unwrap_or_default();
    let tail = tail.as_slice();
    // The longest end of the file that is a beginning of the lines: what made it before a kill.
    let from = (0..=tail.len()).find(|&at| lines.as_bytes().starts_with(&tail[at..])).unwrap_or(tail.len());
    let done = tail.len() - from;
    if done == lines.len() {
        return Ok(());
    }
    std::fs::create_dir_all(file.parent().expect("a log file has a folder"))?;
    crate::failpoint("log");
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&file)?;
    std::io::Write::write_all(&mut log, &lines.as_bytes()[done..])
}

/// Whether the day's log ends with the last line the last committed build owes it. Each line names its run,
/// and a build's lines are appended in order by one write, so a log ending with the last one holds them all.
fn appended(conn: &Connection, output_dir: &Path) -> Result<bool, std::io::Error> {
    let end = store::meta(conn, LOG_DUE_END).map_err(std::io::Error::other)?;
    let Some(end) = end.and_then(|end| serde_json::from_str::<serde_json::Value>(&end).ok()) else { return Ok(false) };
    let (Some(file), Some(last)) = (end["file"].as_str(), end["last"].as_str()) else { return Ok(false) };
    let file = crate::store::paths::inside(output_dir, file)?;
    Ok(read_tail(&file, last.len()).is_ok_and(|tail| tail == last.as_bytes()))
}

/// Whether the day's log at `file` is absent, empty or opens with a line this tool writes (a JSON object
/// with a `run_id`): a file of the user's own there is never appended to.
fn is_ours(file: &Path) -> std::io::Result<bool> {
    use std::io::BufRead;
    let opened = match std::fs::File::open(file) {
        Ok(opened) => opened,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(error) => return Err(error),
    };
    let mut first = Vec::new();
    std::io::Read::take(std::io::BufReader::new(opened), 1 << 16).read_until(b'\n', &mut first)?;
    if first.is_empty() {
        return Ok(true);
    }
    let line: Option<serde_json::Value> = serde_json::from_slice(&first).ok();
    Ok(line.is_some_and(|line| line.get("run_id").is_some()))
}

/// The last `length` bytes of a file (all of it when shorter).
fn read_tail(file: &Path, length: usize) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut opened = std::fs::File::open(file)?;
    let size = opened.metadata()?.len();
    opened.seek(SeekFrom::Start(size.saturating_sub(length as u64)))?;
    let mut tail = Vec::with_capacity(length);
    opened.read_to_end(&mut tail)?;
    Ok(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due(conn: &Connection) -> String {
        let change = |artifact: &str| ArtifactChange {
            artifact: artifact.to_string(),
            kind: "page",
            old_hash: None,
            new_hash: Some("h".to_string()),
            sources: Vec::new(),
        };
        record_log(conn, "run-1", "2026-11-30T00:00:00.000Z", &[change("wiki/a.md"), change("wiki/b.md")]).unwrap();
        let due: serde_json::Value = serde_json::from_str(&store::meta(conn, LOG_DUE).unwrap().unwrap()).unwrap();
        due["lines"].as_str().unwrap().to_string()
    }

    #[test]
    fn the_log_gets_a_builds_lines_once_however_far_a_killed_append_got() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)").unwrap();
        let lines = due(&conn);
        let earlier = "{\"run_id\":\"run-0\"}\n";
        for cut in [0, 1, 17, lines.len() / 2, lines.len() - 1, lines.len()] {
            let output = tempfile::tempdir().unwrap();
            let file = output.path().join("logs/2026/11/30.jsonl");
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, format!("{earlier}{}", &lines[..cut])).unwrap();
            complete_log(&conn, output.path()).unwrap();
            complete_log(&conn, output.path()).unwrap();
            assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{earlier}{lines}"), "cut at {cut}");
        }
        // A file of the user's own where the day's log goes is left as it is.
        let output = tempfile::tempdir().unwrap();
        let file = output.path().join("logs/2026/11/30.jsonl");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "my own notes\n").unwrap();
        let error = complete_log(&conn, output.path()).unwrap_err();
        assert!(error.to_string().contains("not a log this tool wrote"), "{error}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "my own notes\n");
        record_log(&conn, "run-2", "2026-11-30T00:00:00.000Z", &[]).unwrap();
        assert_eq!(store::meta(&conn, LOG_DUE).unwrap(), None, "a build without changes owes nothing");
        assert_eq!(store::meta(&conn, LOG_DUE_END).unwrap(), None);
    }

    /// Once the log ends with a build's last line, the builds after it check that line alone: the lines it
    /// owed are not read again (here they are replaced by others, which a read would append).
    #[test]
    fn a_log_that_ends_with_the_last_line_owed_is_not_read_again() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)").unwrap();
        let lines = due(&conn);
        let output = tempfile::tempdir().unwrap();
        let file = output.path().join("logs/2026/11/30.jsonl");
        complete_log(&conn, output.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), lines);
        let other = serde_json::json!({"file": "logs/2026/11/30.jsonl", "lines": "{\"run_id\":\"run-9\"}\n"});
        store::set_meta(&conn, LOG_DUE, &other.to_string()).unwrap();
        complete_log(&conn, output.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), lines, "the lines owed were not read");
        // A log cut before its last line is completed from the lines owed.
        std::fs::write(&file, &lines[..lines.len() - 1]).unwrap();
        complete_log(&conn, output.path()).unwrap();
        assert!(std::fs::read_to_string(&file).unwrap().ends_with("{\"run_id\":\"run-9\"}\n"));
        // A stored path that leaves the output folder is refused before anything is read or written there.
        let escape = serde_json::json!({"file": "../escape.jsonl", "last": "x\n"});
        store::set_meta(&conn, LOG_DUE_END, &escape.to_string()).unwrap();
        let outside = output.path().parent().unwrap().join("escape.jsonl");
        assert!(complete_log(&conn, output.path()).is_err());
        assert!(!outside.exists());
    }
}
