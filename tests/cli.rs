//! The `persona-bot` binary's start-up: a bad configuration is one clear line and exit code 2;
//! and what it prints and logs carries no secret from the URLs it was given.

use std::process::Command;

// The real MCP server the `check-config --connect` test starts (this binary again, as a child).
pub mod support {
    pub mod mcp_server;
}

/// Not a test: the stdio MCP server, when `check-config --connect` starts this binary as one
/// (with `--ignored`).
#[tokio::test]
#[ignore = "the stdio MCP server the test starts, not a test"]
async fn stdio_server_child() {
    support::mcp_server::serve_stdio_if_child().await;
}

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_persona-bot"));
    // Overrides from the developer's shell must not leak into these tests.
    for (key, _) in std::env::vars() {
        if key.starts_with("PERSONA_BOT_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

fn shipped_config() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config")
}

// SPEC D2: the shipped configuration loads.
#[test]
fn check_config_accepts_the_shipped_defaults() {
    let out = bin()
        .args(["check-config", "--config-dir"])
        .arg(shipped_config())
        .output()
        .expect("run persona-bot");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("plan_image"));
}

// SPEC D2: an invalid setting stops start-up with one line naming it.
#[test]
fn invalid_setting_stops_start_up_with_one_line_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        shipped_config().join("default.toml"),
        dir.path().join("default.toml"),
    )
    .expect("copy");
    let out = bin()
        .args(["check-config", "--config-dir"])
        .arg(dir.path())
        .env("PERSONA_BOT_MEMORY__FACTS_PER_USER", "lots")
        .output()
        .expect("run persona-bot");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("`memory.facts_per_user`"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

// SPEC D2: a configuration directory named on the command line that does not exist is one
// line too.
#[test]
fn missing_config_dir_is_one_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = bin()
        .args(["check-config", "--config-dir"])
        .arg(dir.path().join("nowhere"))
        .output()
        .expect("run persona-bot");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("nowhere does not exist"), "{stderr}");
}

// The binary runs from any directory: without a config folder it uses the defaults built into it.
#[test]
fn runs_from_anywhere_with_the_built_in_defaults() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = bin()
        .arg("check-config")
        .current_dir(dir.path())
        .output()
        .expect("run persona-bot");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("config OK (built-in defaults)"), "{stdout}");
}

// SPEC D1: `persona-bot migrate` creates the SQLite file (and its folder) and is idempotent.
#[test]
fn migrate_creates_and_migrates_the_sqlite_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("data").join("bot.db");
    for _ in 0..2 {
        let out = bin()
            .args(["migrate", "--config-dir"])
            .arg(shipped_config())
            .env(
                "PERSONA_BOT_DATABASE__URL",
                format!("sqlite://{}", db.display()),
            )
            .env_remove("DATABASE_URL")
            .output()
            .expect("run persona-bot");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("Sqlite database migrated"));
    }
    assert!(db.is_file());
}

// SPEC D2: `persona-bot run` without DISCORD_TOKEN is one clear line, not a panic.
#[test]
fn run_without_a_token_is_one_clear_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = bin()
        .args(["run", "--config-dir"])
        .arg(shipped_config())
        .env_remove("DISCORD_TOKEN")
        .env(
            "PERSONA_BOT_DATABASE__URL",
            format!("sqlite://{}/bot.db", dir.path().display()),
        )
        .output()
        .expect("run persona-bot");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains(" INFO ") && !l.contains(" WARN "))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("DISCORD_TOKEN is not set"), "{stderr}");
    assert!(!stderr.contains("panicked"));
}

// SPEC D10: a provider key a header cannot carry stops start-up with one line naming the
// variable (it used to panic inside the provider client at the first request), never the value.
#[test]
fn a_secret_a_header_cannot_carry_is_one_line() {
    let out = bin()
        .arg("check-config")
        .env("PROVIDER_API_KEYS", "sk-good,sk-bad\u{7f}value")
        .output()
        .expect("run persona-bot");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("PROVIDER_API_KEYS: key 2"), "{stderr}");
    assert!(!stderr.contains("sk-"), "{stderr}");
}

// SPEC D10: one exit-status table for every subcommand: a database URL the bot cannot use is
// configuration (2), a database that does not answer is a run-time failure (1), for `migrate`
// and `run` alike (the same refusal used to exit 1 from one and 2 from the other).
#[test]
fn every_command_exits_by_one_table() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exit = |command: &str, url: &str| {
        let out = bin()
            .arg(command)
            .current_dir(dir.path())
            .env("DISCORD_TOKEN", "test-token")
            .env("DATABASE_URL", url)
            .output()
            .expect("run persona-bot");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{stderr}");
        (out.status.code(), stderr)
    };
    let refused = std::thread::scope(|s| {
        let migrate = s.spawn(|| exit("migrate", "postgres://postgres@127.0.0.1:1/none"));
        let run = s.spawn(|| exit("run", "postgres://postgres@127.0.0.1:1/none"));
        [migrate.join().expect("migrate"), run.join().expect("run")]
    });
    for (code, stderr) in refused {
        assert_eq!(code, Some(1), "{stderr}");
    }
    for command in ["migrate", "run"] {
        let (code, stderr) = exit(command, "sqlite:file.db");
        assert_eq!(code, Some(2), "{command}: {stderr}");
        assert!(stderr.contains("sqlite://"), "{stderr}");
    }
}

// SPEC D10: a database that cannot be opened says why, in one line, within the connect timeout
// (database.connect_timeout_secs, 5 s by default): refused, no answer, or a file that is not
// SQLite. Each used to take 10 s and end in "pool timed out while waiting for an open
// connection", the cause lost.
#[test]
fn database_errors_keep_their_cause_within_the_connect_timeout() {
    let dir = tempfile::tempdir().expect("temp dir");
    let not_sqlite = dir.path().join("notes.db");
    std::fs::write(
        &not_sqlite,
        "these are my notes, not a database\n".repeat(200),
    )
    .expect("write");
    // Accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_url = format!(
        "postgres://postgres@{}/none",
        silent.local_addr().expect("addr")
    );
    let cases = [
        ("postgres://postgres@127.0.0.1:1/none", "connection refused"),
        (silent_url.as_str(), "no answer within 1 s"),
        (
            &format!("sqlite://{}", not_sqlite.display()),
            "not an SQLite database",
        ),
    ];
    for (url, cause) in cases {
        for command in ["migrate", "run"] {
            let started = std::time::Instant::now();
            let out = bin()
                .arg(command)
                .current_dir(dir.path())
                .env("DISCORD_TOKEN", "test-token")
                .env("DATABASE_URL", url)
                .env("PERSONA_BOT_DATABASE__CONNECT_TIMEOUT_SECS", "1")
                .output()
                .expect("run persona-bot");
            let took = started.elapsed();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("database")).collect();
            assert_eq!(out.status.code(), Some(1), "{command} {url}: {stderr}");
            assert_eq!(errors.len(), 1, "{command} {url}: one line: {stderr}");
            assert!(errors[0].contains(cause), "{command} {url}: {stderr}");
            assert_eq!(
                errors[0].matches(cause).count(),
                1,
                "{command} {url}: the cause once: {stderr}"
            );
            assert!(!stderr.contains("pool timed out"), "{stderr}");
            assert!(
                took < std::time::Duration::from_secs(8),
                "{command} {url}: {took:?}"
            );
        }
    }
    drop(silent);
}

/// Secrets planted in every URL and credential the environment gives the bot (files refuse
/// them, so the environment is where an operator puts them).
const PLANTED: [&str; 8] = [
    "Sekrit1pw",
    "Sekrit2pwd",
    "Sekrit3pw",
    "Sekrit4tok",
    "Sekrit5pw",
    "Sekrit6key",
    "Sekrit7bot",
    "Sekrit8api",
];

/// The bot with [`PLANTED`] in the database URL (its password and an unknown `pwd` parameter,
/// which sqlx warns of with its value), the Discord proxy's and the provider's URLs (userinfo
/// and query), the image backends' URLs, the token and the key. Nothing answers on port 1.
fn with_planted_secrets(command: &str) -> Command {
    let [
        pw,
        pwd,
        proxy_pw,
        proxy_token,
        provider_pw,
        provider_key,
        token,
        key,
    ] = PLANTED;
    let mut cmd = bin();
    cmd.arg(command)
        .env_remove("RUST_LOG")
        .env(
            "DATABASE_URL",
            format!("postgres://postgres:{pw}@127.0.0.1:1/none?pwd={pwd}"),
        )
        .env(
            "PERSONA_BOT_DISCORD__API_BASE_URL",
            format!("http://bot:{proxy_pw}@127.0.0.1:1/?token={proxy_token}"),
        )
        .env(
            "PERSONA_BOT_PROVIDER__BASE_URL",
            format!("http://u:{provider_pw}@127.0.0.1:1/v1?key={provider_key}"),
        )
        .env(
            "PERSONA_BOT_IMAGE_WORKER__OPENAI_URL",
            format!("http://u:{provider_pw}@127.0.0.1:1/v1?api_key={provider_key}"),
        )
        .env(
            "PERSONA_BOT_IMAGE_WORKER__COMFYUI_URL",
            format!("http://u:{provider_pw}@127.0.0.1:1/?token={provider_key}"),
        )
        .env(
            "DISCORD_TOKEN",
            format!("MTE0NjM4MjY0NzY3ODQwMjU5Mg.GhIjKl.{token}"),
        )
        .env("PROVIDER_API_KEYS", format!("sk-{key}"));
    cmd
}

/// Every line printed, out and err, free of every planted secret; the lines, for more checks.
fn assert_no_planted_secret(out: &std::process::Output) -> String {
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for line in printed.lines() {
        for secret in PLANTED {
            assert!(!line.contains(secret), "{secret} printed: {line}");
        }
    }
    printed
}

// SPEC D13: `check-config --connect` names each service it could not reach, and no line shows
// a password, token or key from any URL: the Discord proxy's userinfo used to be printed whole,
// and sqlx warned of the database URL's unknown `pwd` parameter with its value.
#[test]
fn check_config_connect_prints_no_secret_from_any_url() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = with_planted_secrets("check-config")
        .arg("--connect")
        .current_dir(dir.path())
        .output()
        .expect("run persona-bot");
    let printed = assert_no_planted_secret(&out);
    assert_eq!(out.status.code(), Some(1), "{printed}");
    for service in [
        "database: not reachable",
        "provider: not reachable",
        "discord: not reachable",
    ] {
        assert!(printed.contains(service), "{service}: {printed}");
    }
    assert!(
        printed.contains("127.0.0.1:1"),
        "the address is shown: {printed}"
    );
}

// SPEC D13: a short `run` logs no secret from any URL: not in the warning at each try to reach
// Discord through a proxy whose URL carries credentials (it used to show them at every try),
// nor when the database URL carries them.
#[test]
fn a_short_run_logs_no_secret_from_any_url() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = with_planted_secrets("run")
        .current_dir(dir.path())
        .env(
            "DATABASE_URL",
            format!("sqlite://{}/bot.db", dir.path().display()),
        )
        .env("PERSONA_BOT_DISCORD__RECONNECT_MAX_SECS", "1")
        .env("PERSONA_BOT_METRICS__LISTEN", "127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run persona-bot");
    // Tries at about 0, 1 and 2 s.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    child.kill().expect("stop persona-bot");
    let out = child.wait_with_output().expect("its output");
    let printed = assert_no_planted_secret(&out);
    assert!(
        printed.matches("Discord cannot be reached").count() >= 2,
        "{printed}"
    );
    // The database URL with credentials and an unknown parameter: refused at once.
    let out = with_planted_secrets("run")
        .current_dir(dir.path())
        .output()
        .expect("run persona-bot");
    let printed = assert_no_planted_secret(&out);
    assert_eq!(out.status.code(), Some(1), "{printed}");
    assert!(printed.contains("connection refused"), "{printed}");
}

// SPEC E4: `check-config --connect` starts each MCP server and lists its tools as the persona
// would be offered them; one that cannot be started is named, not reachable, with why.
#[test]
fn check_config_connect_lists_each_mcp_servers_tools() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("mcp.log");
    let (command, args) = support::mcp_server::stdio_command("stdio_server_child", &log);
    let servers = serde_json::json!([
        { "name": "tests", "command": command, "args": args },
        { "name": "gone", "command": "/nonexistent/mcp-server" },
    ]);
    // TOML's inline tables read JSON's objects and arrays when keys are bare words.
    let servers = servers
        .to_string()
        .replace("\"name\":", "name=")
        .replace("\"command\":", "command=")
        .replace("\"args\":", "args=");
    let local = format!(
        "[database]\nurl = \"sqlite://{}/bot.db\"\n[mcp]\nservers = {servers}\n",
        dir.path().display()
    );
    std::fs::write(dir.path().join("local.toml"), local).expect("local.toml");
    let out = bin()
        .args(["check-config", "--connect", "--config-dir"])
        .arg(dir.path())
        .env("PERSONA_BOT_PROVIDER__BASE_URL", "http://127.0.0.1:1/v1")
        .env("PERSONA_BOT_DISCORD__API_BASE_URL", "http://127.0.0.1:1")
        .env("PROVIDER_API_KEYS", "test-key")
        .env("DISCORD_TOKEN", "test-token")
        .output()
        .expect("run persona-bot");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        printed.contains("mcp tests: ok, tools: tests__lookup, tests__add_note"),
        "{printed}"
    );
    assert!(
        printed.contains("mcp gone: not reachable: could not start /nonexistent/mcp-server"),
        "{printed}"
    );
    assert_eq!(out.status.code(), Some(1), "{printed}");
}
