//! The layers read bottom-up, checked: no module of `src/` uses a module of a higher layer.
//!
//! ```text
//! base      config, locale, redact, http_body, telemetry, shutdown (and the crate root's items)
//! domain    domain (types, ports, notices, the provider-failure classifier)
//! tools     tools (the registry, sessions, the reviewer port, one tool per file)
//! stage     stage (execute_tool_call and its gates, payload builders)
//! engine    engine (orchestrator, pass loop, stream delivery, reviewer, reminders, worker)
//! adapters  discord, provider, storage, media, observe
//! app       app, main, testkit (test fakes may use anything)
//! ```
//!
//! A source scan: every `use crate::…` / `use super::…` item (braces expanded) and every inline
//! `crate::…` path outside comments and `#[cfg(test)]` modules.
//!
//! Two more checks read the same scan: no import circle between the modules of one folder
//! (`a` uses `b` uses `a`, which the layer order cannot see inside one layer), and every
//! top-level module of `src/` has its row in the table below (a module without one would pass
//! as `base` unnoticed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// (module path prefix, layer); the longest matching prefix decides.
const LAYERS: &[(&str, u8)] = &[
    ("config", 0),
    ("locale", 0),
    ("redact", 0),
    ("http_body", 0),
    ("telemetry", 0),
    ("shutdown", 0),
    ("domain", 1),
    ("tools", 2),
    ("stage", 3),
    ("engine", 4),
    ("discord", 5),
    ("provider", 5),
    ("storage", 5),
    ("media", 5),
    ("mcp", 5),
    ("observe", 5),
    ("app", 6),
    ("main", 6),
    ("testkit", 6),
];

const NAMES: [&str; 7] = [
    "base", "domain", "tools", "stage", "engine", "adapters", "app",
];

fn layer(module: &str) -> u8 {
    LAYERS
        .iter()
        .filter(|(prefix, _)| {
            module == *prefix
                || module
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with("::"))
        })
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(0, |(_, layer)| *layer)
}

/// `src/engine/orchestrator.rs` → `engine::orchestrator`; `src/tools/mod.rs` → `tools`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without comments and without its `#[cfg(test)]` modules.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i32> = None;
    let mut depth = 0i32;
    let mut cfg_test = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        let line = line.split(" //").next().unwrap_or(line);
        if trimmed.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        if cfg_test && trimmed.starts_with("mod ") && skip_depth.is_none() {
            skip_depth = Some(depth);
        }
        cfg_test = false;
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if let Some(at) = skip_depth {
            if depth <= at {
                skip_depth = None;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Expands `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        return vec![path.trim_end_matches("::*").to_owned()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.trim().is_empty())
        .flat_map(expand)
        .map(|rest| {
            if rest == "self" {
                prefix.to_owned()
            } else {
                format!("{prefix}::{rest}")
            }
        })
        .collect()
}

/// The modules a file's code refers to, resolved from the crate root. `children` are the
/// modules the file declares (a folder's own file): a path may start with one of them, or with
/// `self::`.
fn references(module: &str, code: &str, children: &[String]) -> Vec<String> {
    // `super` of `a::b` is `a` (for a/b.rs and a/b/mod.rs alike); of `a`, the root.
    let parent = |module: &str| -> String {
        module
            .rsplit_once("::")
            .map_or(String::new(), |(p, _)| p.to_owned())
    };
    let mut refs = Vec::new();
    let mut resolve = |path: &str| {
        let mut base = module.to_owned();
        let mut rest = path;
        if let Some(r) = rest.strip_prefix("crate::") {
            base.clear();
            rest = r;
        } else if let Some(r) = rest.strip_prefix("self::") {
            rest = r;
        } else if children
            .iter()
            .any(|child| rest.split("::").next() == Some(child.as_str()))
        {
            // A declared child, from the file that declares it.
        } else {
            let mut climbed = false;
            while let Some(r) = rest.strip_prefix("super::") {
                base = parent(&base);
                rest = r;
                climbed = true;
            }
            if !climbed {
                return;
            }
        }
        // Module segments only (lower case); a type or function ends the path.
        let segments: Vec<&str> = rest
            .split("::")
            .take_while(|s| s.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
            .collect();
        let mut full = base;
        for s in segments {
            if !full.is_empty() {
                full.push_str("::");
            }
            full.push_str(s);
        }
        refs.push(full);
    };
    // `use` statements start a line (after any visibility) and end at `;`.
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let after_vis = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        // A folder's own file re-exporting its children (`pub use rest::Client;`) is its face,
        // not code that uses them.
        let re_export = after_vis.len() < trimmed.len()
            && children.iter().any(|child| {
                after_vis.strip_prefix("use ").is_some_and(|p| {
                    p.starts_with(&format!("{child}::"))
                        || p.starts_with(&format!("self::{child}::"))
                })
            });
        if re_export {
            offset += line.len();
            continue;
        }
        if let Some(statement) = after_vis.strip_prefix("use ") {
            let start = offset + (line.len() - statement.len());
            let tail = &code[start..];
            let end = tail.find(';').unwrap_or(tail.len());
            for path in expand(&tail[..end]) {
                resolve(&path);
            }
        }
        offset += line.len();
    }
    // Inline paths (`crate::a::f()`, `super::b::g()`), each from its start: not the middle of
    // a longer path such as `super::super::c`.
    let starts = ["crate::", "super::", "self::"]
        .into_iter()
        .map(str::to_owned)
        .chain(children.iter().map(|child| format!("{child}::")));
    for start in starts {
        for (at, _) in code.match_indices(start.as_str()) {
            let inside = code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
            if inside {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            // `super::{a, b}` is a use tree, read above.
            if path.ends_with("::") {
                continue;
            }
            resolve(&path);
        }
    }
    refs
}

/// Every upward use in `src/`, as "file: module (layer) uses target (layer)".
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    collect(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let module = module_of(src, &file);
        if module == "lib" || file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let from = layer(&module);
        for target in references(&module, &code(&text), &[]) {
            let to = layer(&target);
            if to > from {
                found.push(format!(
                    "{}: {module} ({}) uses {target} ({})",
                    file.display(),
                    NAMES[from as usize],
                    NAMES[to as usize]
                ));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The modules of `src/` and the sibling edges between them: `a -> b` when a module inside `a`
/// refers to one inside `b`, `a` and `b` being two modules of one folder.
/// With `own_files`, a folder's own file is a module of it too (see [`sibling_edge`]).
fn sibling_edges(src: &Path, own_files: bool) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    collect(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    // The longest module a referred path is in (a path may go on into items).
    let resolve = |path: &str| -> Option<String> {
        let segments: Vec<&str> = path.split("::").collect();
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("::"))
            .find(|m| modules.contains(m))
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        if module == "lib" || file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let children = children_of(&modules, &module);
        for target in references(&module, &code(&text), &children)
            .iter()
            .filter_map(|t| resolve(t))
        {
            let Some((a, b)) = sibling_edge(&module, &target) else {
                continue;
            };
            if own_files || !(a.ends_with("::mod") || b.ends_with("::mod")) {
                edges.entry(a).or_default().insert(b);
            }
        }
    }
    edges
}

/// The modules declared in `module`'s own file: one segment below it.
fn children_of(modules: &BTreeSet<String>, module: &str) -> Vec<String> {
    let prefix = format!("{module}::");
    modules
        .iter()
        .filter_map(|m| m.strip_prefix(&prefix))
        .filter(|rest| !rest.contains("::"))
        .map(str::to_owned)
        .collect()
}

/// The edge `from` using `target` draws between two modules of one folder. A folder's own file
/// (its `mod.rs`) is a module of that folder too, named `folder::mod`: a file inside the folder
/// that uses an item of it, while it uses that file, closes a circle.
fn sibling_edge(from: &str, target: &str) -> Option<(String, String)> {
    let from: Vec<&str> = from.split("::").collect();
    let to: Vec<&str> = target.split("::").collect();
    let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let own = |folder: &[&str]| format!("{}::mod", folder.join("::"));
    if shared == from.len() && shared == to.len() {
        None
    } else if shared == from.len() {
        // The folder's own file uses one of its modules.
        Some((own(&from), to[..=shared].join("::")))
    } else if shared == to.len() {
        // A module inside the folder uses the folder's own file.
        Some((from[..=shared].join("::"), own(&to)))
    } else {
        Some((from[..=shared].join("::"), to[..=shared].join("::")))
    }
}

/// Every import circle, as its modules ("a, b" for a ↔ b), each found once.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let reach = |start: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.to_owned()];
        while let Some(node) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut found = BTreeSet::new();
    for (module, from_it) in &reached {
        if !from_it.contains(*module) {
            continue;
        }
        let circle: Vec<&str> = from_it
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*module)))
            .map(String::as_str)
            .collect();
        found.insert(circle.join(", "));
    }
    found.into_iter().collect()
}

#[test]
fn no_import_circle_inside_a_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = circles(&sibling_edges(&src, false));
    assert!(
        found.is_empty(),
        "modules that use each other (move the shared items into a module both use):\n{}",
        found.join("\n")
    );
}

// The Discord adapter's wings (gateway, rest, commands) share what they share through
// `discord::data`, below them, never through `discord/mod.rs`, which wires them together: the
// folder's own file is no hub that every wing reaches back to. (Elsewhere a folder's own file
// that defines a trait its files implement, such as `tools/mod.rs`, is the usual Rust shape.)
#[test]
fn no_discord_wing_reaches_back_to_the_wiring() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found: Vec<String> = circles(&sibling_edges(&src, true))
        .into_iter()
        .filter(|circle| circle.starts_with("discord::"))
        .collect();
    assert!(
        found.is_empty(),
        "discord modules that use each other, counting discord/mod.rs:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    let missing: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(&src, f))
        .filter_map(|m| m.split("::").next().map(str::to_owned))
        .filter(|top| top != "lib" && !LAYERS.iter().any(|(name, _)| name == top))
        .collect();
    assert!(
        missing.is_empty(),
        "top-level modules without a row in LAYERS: {missing:?}"
    );
}

// The circle check itself: siblings that use each other are one circle, however far apart
// their files are inside the two folders; a folder and its own files are not.
#[test]
fn the_circle_check_finds_siblings_that_use_each_other() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("discord/rest")).expect("dir");
    std::fs::write(src.join("discord/mod.rs"), "use self::events::Handler;\n").expect("write");
    std::fs::write(
        src.join("discord/events.rs"),
        "use super::rest::client::Client;\nuse super::Data;\n",
    )
    .expect("write");
    std::fs::write(src.join("discord/rest/mod.rs"), "").expect("write");
    std::fs::write(
        src.join("discord/rest/client.rs"),
        "fn f() { crate::discord::events::on_message(); }\n",
    )
    .expect("write");
    std::fs::write(
        src.join("discord/catch_up.rs"),
        "use super::events::Handler;\n",
    )
    .expect("write");
    // An inline `super::` path counts as a `use` does.
    std::fs::write(
        src.join("discord/guild.rs"),
        "fn g() { super::webhooks::hook(); }\n",
    )
    .expect("write");
    std::fs::write(
        src.join("discord/webhooks.rs"),
        "use super::guild::Cache;\n",
    )
    .expect("write");
    let found = circles(&sibling_edges(src, false));
    assert_eq!(
        found,
        vec![
            "discord::events, discord::rest".to_owned(),
            "discord::guild, discord::webhooks".to_owned()
        ]
    );
    // Counting the folder's own file: events uses an item of it (`super::Data`) and it uses
    // events (`self::events::Handler`), so it joins their circle.
    let found = circles(&sibling_edges(src, true));
    assert_eq!(
        found,
        vec![
            "discord::events, discord::mod, discord::rest".to_owned(),
            "discord::guild, discord::webhooks".to_owned()
        ]
    );
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "upward imports (move the type down, or the caller up):\n{}",
        found.join("\n")
    );
}

// The checker itself: an upward use is found, through braces, `super` and inline paths; a
// comment or a test module is not code.
#[test]
fn the_scan_finds_upward_uses_in_every_form() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("domain/ports")).expect("dir");
    std::fs::create_dir_all(src.join("tools")).expect("dir");
    std::fs::write(
        src.join("tools/grab.rs"),
        "use crate::{domain::scope::ServerId, engine::orchestrator::Orchestrator};\n\
         // use crate::discord::Ignored;\n\
         fn f() { crate::storage::Storage::open(); }\n\
         #[cfg(test)]\nmod tests {\n    use crate::app::Anything;\n}\n",
    )
    .expect("write");
    std::fs::write(
        src.join("domain/ports/chat.rs"),
        "use super::super::super::engine::stream::Delivery;\nuse super::super::turn::Turn;\n",
    )
    .expect("write");
    let found = violations(src);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found
            .iter()
            .any(|v| v.contains("uses engine::orchestrator (engine)"))
    );
    assert!(found.iter().any(|v| v.contains("uses storage (adapters)")));
    assert!(
        found
            .iter()
            .any(|v| v.contains("domain::ports::chat (domain) uses engine::stream"))
    );
}
