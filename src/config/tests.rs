//! The loading layers and their errors, over the whole configuration.

use super::*;
use std::path::PathBuf;

pub(super) fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config")
}

pub(super) fn temp_config(local: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        shipped_dir().join("default.toml"),
        dir.path().join("default.toml"),
    )
    .expect("copy defaults");
    if let Some(text) = local {
        std::fs::write(dir.path().join("local.toml"), text).expect("write local");
    }
    dir
}

pub(super) fn no_env() -> Env {
    Env::prefixed("PERSONA_BOT_TEST_UNUSED_PREFIX_").split("__")
}

// SPEC D2: the shipped defaults load, and every key in them is documented by a comment.
#[test]
fn shipped_defaults_load_and_every_key_is_commented() {
    let config = Config::load_with_env(Some(&shipped_dir()), no_env()).expect("defaults load");
    assert_eq!(config.tools.default_timeout_secs, 300);
    let text = std::fs::read_to_string(shipped_dir().join("default.toml")).expect("read");
    let mut previous = "";
    for line in text.lines() {
        let trimmed = line.trim();
        let is_key = !trimmed.is_empty()
            && !trimmed.starts_with('#')
            && !trimmed.starts_with('[')
            && trimmed.contains('=');
        if is_key {
            assert!(
                previous.trim_start().starts_with('#'),
                "key without a comment above it: {trimmed}"
            );
        }
        if !trimmed.is_empty() {
            previous = line;
        }
    }
}

// SPEC D2: a local file overrides the defaults.
#[test]
fn local_file_overrides_defaults() {
    let dir = temp_config(Some("[tools]\ndefault_timeout_secs = 42\n"));
    let config = Config::load_with_env(Some(dir.path()), no_env()).expect("load");
    assert_eq!(config.tools.default_timeout_secs, 42);
}

// SPEC D2: the environment overrides files.
#[test]
#[allow(clippy::result_large_err)] // figment's Jail closure returns figment's own error type
fn environment_overrides_files() {
    let dir = temp_config(Some("[tools]\ndefault_timeout_secs = 42\n"));
    figment::Jail::expect_with(|jail| {
        jail.set_env("PBTEST_TOOLS__DEFAULT_TIMEOUT_SECS", "7");
        let env = Env::prefixed("PBTEST_").split("__");
        let config = Config::load_with_env(Some(dir.path()), env).expect("load");
        assert_eq!(config.tools.default_timeout_secs, 7);
        Ok(())
    });
}

// SPEC D2: an invalid value stops start-up with one line naming the key.
#[test]
fn invalid_value_is_one_line_naming_the_key() {
    let dir = temp_config(Some("[tools]\ndefault_timeout_secs = \"soon\"\n"));
    let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
    let line = err.to_string();
    assert!(line.contains("`tools.default_timeout_secs`"), "{line}");
    assert!(!line.contains('\n'), "{line}");
}

// SPEC D2: a missing key is named (a configuration given whole, without the built-in layer).
#[test]
fn missing_key_is_named() {
    let without: String = BUILT_IN_DEFAULTS
        .lines()
        .filter(|l| !l.starts_with("fact_max_chars"))
        .collect::<Vec<_>>()
        .join("\n");
    let err = Config::from_toml(&without).unwrap_err();
    let ConfigError::Key { key, problem } = &err else {
        panic!("expected a key error, got {err:?}");
    };
    assert_eq!(key, "memory.fact_max_chars");
    assert!(problem.starts_with("is missing"), "{problem}");
}

// SPEC D2: an unknown key (a typo) is named rather than ignored.
#[test]
fn unknown_key_is_named() {
    let dir = temp_config(Some("[tools]\ndefault_timeout_sec = 5\n"));
    let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
    assert!(
        err.to_string().contains("`tools.default_timeout_sec`"),
        "{err}"
    );
}

// SPEC D2: background loops refuse a zero interval (a busy loop), and a worker lease must
// outlast the image timeout (else a second worker takes a task the first still works on).
#[test]
fn background_intervals_and_the_worker_lease_are_checked() {
    for (toml, named) in [
        (
            "[image_worker]\npoll_ms = 0\n",
            "`image_worker.poll_ms`: must be from 1 to 604800000 ms",
        ),
        (
            "[reminders]\npoll_ms = 0\n",
            "`reminders.poll_ms`: must be from 1 to 604800000 ms",
        ),
        (
            "[review]\ntimeout_secs = 0\n",
            "`review.timeout_secs`: must be from 1 to 604800 s",
        ),
        (
            "[provider]\nstream_max_bytes = 0\n",
            "`provider.stream_max_bytes`: must be from 1 to 268435456",
        ),
        (
            "[provider]\nstream_max_secs = 0\n",
            "`provider.stream_max_secs`: must be from 1 to 604800 s",
        ),
        (
            "[image_worker]\nmax_image_bytes = 0\n",
            "`image_worker.max_image_bytes`: must be from 1 to 104857600",
        ),
        (
            "[discord]\nrate_bucket_idle_secs = 0\n",
            "`discord.rate_bucket_idle_secs`: must be from 1 to 604800 s",
        ),
        (
            "[image_worker]\ntimeout_secs = 600\nlease_secs = 600\n",
            "`image_worker.lease_secs`: must be longer than image_worker.timeout_secs",
        ),
    ] {
        let dir = temp_config(Some(toml));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        assert!(err.to_string().contains(named), "{toml}: {err}");
    }
}

// SPEC D2: zero is out of range for a timeout.
#[test]
fn zero_timeout_is_refused() {
    let dir = temp_config(Some("[tools.timeouts_secs]\nplan_image = 0\n"));
    let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
    assert!(
        err.to_string()
            .contains("`tools.timeouts_secs.plan_image`: must be from 1 to 604800 s"),
        "{err}"
    );
}

// SPEC D2: secrets only from the environment; a token in a file is refused by name.
#[test]
fn secret_in_file_is_refused() {
    let dir = temp_config(Some("[general]\ndiscord_token = \"abc\"\n"));
    let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
    assert_eq!(
        err,
        ConfigError::SecretInFile {
            key: "general.discord_token".into()
        }
    );
    assert!(!err.to_string().contains("abc"));
}

// SPEC D10: a wrong value is named but not shown when it is a string (a key put under the
// wrong name), and never makes a long line; a syntax error names the file, where and why.
#[test]
fn errors_never_echo_a_string_value_and_stay_short() {
    let dir = temp_config(Some(
        "[provider]\nmax_tokens = \"sk-live-abcdefghijklmnop\"\n",
    ));
    let err = Config::load_with_env(Some(dir.path()), no_env())
        .unwrap_err()
        .to_string();
    assert!(err.contains("`provider.max_tokens`"), "{err}");
    assert!(!err.contains("sk-live"), "{err}");
    let huge = "x".repeat(100_000);
    let dir = temp_config(Some(&format!("[memory]\nfacts_per_user = \"{huge}\"\n")));
    let err = Config::load_with_env(Some(dir.path()), no_env())
        .unwrap_err()
        .to_string();
    assert!(err.len() <= 300, "{} characters", err.len());
    let dir = temp_config(Some("[memory\nfacts_per_user = 3\n"));
    let err = Config::load_with_env(Some(dir.path()), no_env())
        .unwrap_err()
        .to_string();
    assert!(err.contains("local.toml"), "{err}");
    assert!(err.contains("line 1"), "{err}");
    assert!(!err.contains('\n'), "{err}");
}

/// Every leaf setting of the built-in defaults (`section.key`, tables nested), but the
/// personas (an array of tables), with whether it is a number.
fn every_leaf_setting() -> Vec<(String, bool)> {
    use figment::value::Value;
    fn walk(prefix: &str, value: &Value, out: &mut Vec<(String, bool)>) {
        match value {
            Value::Dict(_, map) => {
                for (key, inner) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    walk(&path, inner, out);
                }
            }
            Value::Array(..) if prefix == "personas" => {}
            Value::Num(..) => out.push((prefix.to_owned(), true)),
            _ => out.push((prefix.to_owned(), false)),
        }
    }
    let defaults: Value = figment::Figment::from(Toml::string(BUILT_IN_DEFAULTS))
        .extract()
        .expect("defaults parse");
    let mut out = Vec::new();
    walk("", &defaults, &mut out);
    out
}

// SPEC D10: every setting, given a hostile value (0, -1, the largest integer, a key-like
// string, 100 kB of text), either loads or fails in one line of at most 200 characters that
// names a setting and never shows the key-like value; nothing panics.
#[test]
fn every_setting_survives_hostile_values() {
    let settings = every_leaf_setting();
    assert!(settings.len() > 80, "{}", settings.len());
    let planted = "sk-live-abcdefghijklmnopqrstuvwx";
    let huge = format!("\"{}\"", "x".repeat(100_000));
    for (path, numeric) in settings {
        let (section, key) = path.rsplit_once('.').expect("a section");
        let mut values = vec![format!("\"{planted}\""), huge.clone()];
        if numeric {
            values.extend(["0", "-1", "9223372036854775807"].map(str::to_owned));
        }
        for value in values {
            let dir = temp_config(Some(&format!("[{section}]\n{key} = {value}\n")));
            let Err(err) = Config::load_with_env(Some(dir.path()), no_env()) else {
                continue;
            };
            let err = err.to_string();
            let shown: String = value.chars().take(40).collect();
            assert!(
                err.len() <= 200,
                "{path} = {shown}: {} characters",
                err.len()
            );
            assert!(!err.contains('\n'), "{path} = {shown}: {err}");
            assert!(
                err.contains('`'),
                "{path} = {shown} names no setting: {err}"
            );
            assert!(!err.contains("sk-live"), "{path}: {err}");
        }
    }
}

// SPEC D10: a file that does not read names itself: invalid UTF-8, and a `default.toml`
// that is not a file (it used to be passed over without a word).
#[test]
fn a_file_that_does_not_read_is_named() {
    let dir = temp_config(None);
    std::fs::write(
        dir.path().join("local.toml"),
        b"[memory]\nfact_max_chars = \"\xff\xfe\"\n",
    )
    .expect("write");
    let err = Config::load_with_env(Some(dir.path()), no_env())
        .unwrap_err()
        .to_string();
    assert!(err.contains("local.toml"), "{err}");
    assert!(!err.contains('\n') && err.len() <= 200, "{err}");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("default.toml")).expect("mkdir");
    let err = Config::load_with_env(Some(dir.path()), no_env())
        .unwrap_err()
        .to_string();
    assert!(err.contains("default.toml: is not a file"), "{err}");
}

// SPEC D10: a secret-looking setting name that is not a setting points to the variables.
#[test]
#[allow(clippy::result_large_err)] // figment's Jail closure returns figment's own error type
fn a_token_setting_points_to_the_environment_variable() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("PBTEST2_DISCORD__TOKEN", "abc");
        let env = Env::prefixed("PBTEST2_").split("__");
        let err = Config::load_with_env(None, env).unwrap_err().to_string();
        assert!(
            err.contains("`discord.token`") && err.contains("DISCORD_TOKEN,"),
            "{err}"
        );
        assert!(!err.contains("abc"), "{err}");
        Ok(())
    });
}

// SPEC D10: URLs are parsed as URLs, the ComfyUI workflow must exist when ComfyUI is used,
// and the database URL follows the rule storage opens by.
#[test]
fn urls_files_and_the_database_url_are_checked() {
    for (toml, named) in [
        (
            "[provider]\nbase_url = \"http://\"\n",
            "`provider.base_url`",
        ),
        (
            "[provider]\nbase_url = \"http://exa mple/v1\"\n",
            "`provider.base_url`",
        ),
        (
            "[provider]\nbase_url = \"ftp://host/v1\"\n",
            "`provider.base_url`",
        ),
        (
            "[discord]\napi_base_url = \"proxy:3000\"\n",
            "`discord.api_base_url`",
        ),
        (
            "[image_worker]\ncomfyui_url = \"127.0.0.1:8188\"\n",
            "`image_worker.comfyui_url`",
        ),
        (
            "[image_worker]\nopenai_url = \"https://\"\n",
            "`image_worker.openai_url`",
        ),
        (
            "[image_worker]\nbackend = \"comfyui\"\ncomfyui_workflow = \"/nowhere.json\"\n",
            "`image_worker.comfyui_workflow`",
        ),
        ("[database]\nurl = \"sqlite:file.db\"\n", "`database.url`"),
        (
            "[provider]\nmodels = [\"a\"]\nvision_models = [\"b\"]\n",
            "`provider.vision_models`",
        ),
        (
            "[attachments]\norigins = [\"https://cdn.discordapp.com/attachments\"]\n",
            "`attachments.origins`",
        ),
        (
            "[provider]\nmodels = [\"a\"]\ncontext_tokens = { b = 4096 }\n",
            "`provider.context_tokens`",
        ),
        (
            "[provider]\nmodels = [\"a\"]\ncontext_tokens = { a = 100 }\n",
            "`provider.context_tokens.a`: must be from 256 to 10000000",
        ),
        (
            "[attachments]\norigins = [\"cdn.discordapp.com\"]\n",
            "`attachments.origins`",
        ),
    ] {
        let dir = temp_config(Some(toml));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        assert!(err.to_string().contains(named), "{toml}: {err}");
    }
    assert_eq!(database_url_problem("postgres://u@h/db"), None);
    assert!(database_url_problem("sqlite:file.db").is_some());
}

// SPEC D2: a config directory named on the command line that does not exist is one line
// naming it.
#[test]
fn a_missing_config_dir_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let gone = dir.path().join("nowhere");
    let err = Config::load_with_env(Some(&gone), no_env()).unwrap_err();
    assert_eq!(err, ConfigError::MissingDir(gone));
    assert!(err.to_string().contains("does not exist"), "{err}");
}

// The binary runs from anywhere. Without a config directory, or with one that holds
// only a local.toml, the built-in defaults fill every key.
#[test]
fn the_built_in_defaults_need_no_files() {
    let config = Config::load_with_env(None, no_env()).expect("built-in defaults load");
    assert_eq!(config.tools.default_timeout_secs, 300);
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("local.toml"),
        "[memory]\nfacts_per_user = 9\n",
    )
    .expect("write local");
    let config = Config::load_with_env(Some(dir.path()), no_env()).expect("local only");
    assert_eq!(config.memory.facts_per_user, 9);
    assert_eq!(config.tools.default_timeout_secs, 300);
}

// A default.toml in the config directory is a layer over the built-in one (an operator's
// edited copy), and local.toml wins over it.
#[test]
fn a_default_file_in_the_dir_overrides_the_built_in_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("default.toml"),
        "[memory]\nfacts_per_user = 9\nfacts_per_server = 10\n",
    )
    .expect("write defaults");
    std::fs::write(
        dir.path().join("local.toml"),
        "[memory]\nfacts_per_user = 8\n",
    )
    .expect("write local");
    let config = Config::load_with_env(Some(dir.path()), no_env()).expect("load");
    assert_eq!(config.memory.facts_per_user, 8);
    assert_eq!(config.memory.facts_per_server, 10);
}

/// Every way a secret is written into a URL: the userinfo's password, an HTTP user name, a
/// secret-named query parameter (alone or after another), a key-like query value.
fn planted(base: &str, secret: &str) -> Vec<String> {
    let (scheme, rest) = base.split_once("://").expect("a URL");
    let mut urls = vec![format!("{scheme}://bot:{secret}@{rest}")];
    if scheme.starts_with("http") {
        urls.push(format!("{scheme}://{secret}@{rest}"));
    }
    for name in [
        "password", "PASSWORD", "pass", "pwd", "token", "secret", "key", "api_key", "auth",
    ] {
        urls.push(format!("{base}?{name}={secret}"));
        urls.push(format!("{base}?v=1&{name}={secret}"));
    }
    urls.push(format!("{base}?note=sk-{secret}{secret}"));
    urls
}

// SPEC D13: a credential in any part of any URL setting read from a file (the userinfo, a
// query parameter) is refused, naming the setting and the environment variable that may
// carry it instead, never the secret. A query password in database.url used to pass.
#[test]
fn a_credential_in_any_part_of_a_url_in_a_file_is_refused() {
    let secret = "hunter2hunter2";
    let settings = [
        (
            "database",
            "url",
            "postgres://bot@db.internal/bot",
            "DATABASE_URL",
        ),
        (
            "discord",
            "api_base_url",
            "https://proxy.example",
            "PERSONA_BOT_DISCORD__API_BASE_URL",
        ),
        (
            "provider",
            "base_url",
            "https://api.example/v1",
            "PERSONA_BOT_PROVIDER__BASE_URL",
        ),
        (
            "image_worker",
            "comfyui_url",
            "http://127.0.0.1:8188",
            "PERSONA_BOT_IMAGE_WORKER__COMFYUI_URL",
        ),
        (
            "image_worker",
            "openai_url",
            "https://api.example/v1",
            "PERSONA_BOT_IMAGE_WORKER__OPENAI_URL",
        ),
    ];
    for (section, key, base, variable) in settings {
        for url in planted(base, secret) {
            let dir = temp_config(Some(&format!("[{section}]\n{key} = \"{url}\"\n")));
            let err = Config::load_with_env(Some(dir.path()), no_env())
                .expect_err(&url)
                .to_string();
            assert!(err.contains(&format!("`{section}.{key}`")), "{url}: {err}");
            assert!(err.contains(variable), "{url}: {err}");
            assert!(!err.contains(secret), "{url}: {err}");
        }
    }
    // Lists: no credentials in them at all.
    for url in planted("https://cdn.example", secret) {
        for toml in [
            format!("[attachments]\norigins = [\"{url}\"]\n"),
            format!(
                "[[personas]]\nid = \"p\"\ndisplay_name = \"P\"\nsystem_prompt = \"x\"\n\
                 avatar_url = \"{url}/a.png\"\n"
            ),
        ] {
            let dir = temp_config(Some(&toml));
            let err = Config::load_with_env(Some(dir.path()), no_env())
                .expect_err(&toml)
                .to_string();
            assert!(err.contains("takes no credentials"), "{toml}: {err}");
            assert!(!err.contains(secret), "{toml}: {err}");
        }
    }
    // Paths to files are no secrets.
    let dir = temp_config(Some(
        "[database]\nurl = \"postgres://bot@db/bot?sslmode=verify-full&sslrootcert=/ca.pem\"\n",
    ));
    Config::load_with_env(Some(dir.path()), no_env()).expect("a CA file is no secret");
}

// SPEC D13: the variable the refusal names is taken: a URL with credentials from the
// environment loads; only the database's goes in DATABASE_URL, not its setting's override.
#[test]
#[allow(clippy::result_large_err)] // figment's Jail closure returns figment's own error type
fn credentials_in_a_url_come_from_the_environment() {
    figment::Jail::expect_with(|jail| {
        jail.set_env(
            "PBTEST3_DISCORD__API_BASE_URL",
            "https://bot:hunter2@proxy.example/?token=hunter2",
        );
        let env = Env::prefixed("PBTEST3_").split("__");
        let config = Config::load_with_env(None, env).expect("from the environment");
        assert!(config.discord.api_base_url.contains("hunter2"));
        jail.set_env(
            "PBTEST3_DATABASE__URL",
            "postgres://bot@db/bot?password=hunter2",
        );
        let env = Env::prefixed("PBTEST3_").split("__");
        let err = Config::load_with_env(None, env).unwrap_err().to_string();
        assert!(err.contains("DATABASE_URL"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        Ok(())
    });
}

// SPEC D10: a refused attachment origin is named without its credentials.
#[test]
fn a_refused_origin_is_shown_without_credentials() {
    let config = Config::shipped_defaults();
    let mut bad = config.clone();
    bad.attachments.origins = vec!["https://bot:hunter2@cdn.example/x?token=hunter2".into()];
    let err = bad.check_vision_and_origins().unwrap_err().to_string();
    assert!(err.contains("`attachments.origins`"), "{err}");
    assert!(err.contains("cdn.example"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}
