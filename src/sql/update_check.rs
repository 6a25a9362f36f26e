//! The current update script against the install scripts (a test only, reading the files as
//! they are): a database updated from the previous release must end with the functions a
//! fresh install makes. So every function the install scripts create (the files `src/lib.rs`
//! includes with `extension_sql_file!`) that is new since the previous release's install
//! script (`sql/snowflake_id--PREVIOUS.sql`), or created there otherwise, is created in the
//! update script (`sql/snowflake_id--PREVIOUS--CURRENT.sql`, CURRENT from `Cargo.toml`)
//! exactly as in the install scripts; so are its `COMMENT ON FUNCTION` and the `GRANT` and
//! `REVOKE` statements that name it, when they are new or changed or the function is made
//! again; a function of the previous release that is gone is dropped there; and a function the
//! update script creates is one of the install scripts' or dropped again by it. A statement
//! identical in the previous install script and in the current ones (after normalising
//! whitespace, comments outside quotes, `OR REPLACE` and an `@extschema@.` before the
//! function's name) needs nothing. `tests/cluster/upgrade.sh` compares every object of an
//! updated database with a fresh install; this finds the functions without a server.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A version's numbers, for ordering: "0.10.0" after "0.9.1".
fn version_key(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The package's version, from `Cargo.toml`'s `[package]` table.
fn current_version(cargo_toml: &str) -> String {
    let mut in_package = false;
    for line in cargo_toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(v) = line.strip_prefix("version") {
                let v = v.trim_start().strip_prefix('=').expect("version = \"...\"");
                return v.trim().trim_matches('"').to_string();
            }
        }
    }
    panic!("no version in Cargo.toml's [package]")
}

/// The releases whose install script `sql/` holds (`snowflake_id--V.sql`).
fn released(names: &[String]) -> Vec<String> {
    let mut versions: Vec<String> = names
        .iter()
        .filter_map(|n| n.strip_prefix("snowflake_id--")?.strip_suffix(".sql"))
        .filter(|v| !v.contains("--"))
        .map(str::to_string)
        .collect();
    versions.sort_by_key(|v| version_key(v));
    versions
}

/// The SQL files of the current install script, in order: `extension_sql_file!("sql/x.sql"`
/// in `src/lib.rs`, relative to `src/`.
fn install_files(lib_rs: &str) -> Vec<String> {
    lib_rs
        .split("extension_sql_file!(")
        .skip(1)
        .map(|rest| {
            let rest = rest.trim_start();
            let rest = rest
                .strip_prefix('"')
                .expect("extension_sql_file!(\"path\"");
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// The statements of a script, as written (without their `;`), and psql's backslash lines
/// left out. Quotes, quoted identifiers, dollar quotes and comments are respected.
fn statements(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'\\' if uncommented(&sql[start..i]).trim().is_empty() => {
                // a psql command (\echo ... \quit), after comments at most: to the end of its
                // line
                i = sql[i..].find('\n').map_or(b.len(), |n| i + n);
                start = i;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = sql[i..].find('\n').map_or(b.len(), |n| i + n);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                continue;
            }
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        if b.get(i + 1) == Some(&q) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
            }
            b'$' => {
                // $tag$ ... $tag$, the tag empty or an identifier; $1 is a parameter
                let tag_end = sql[i + 1..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map(|n| i + 1 + n);
                if let Some(e) = tag_end {
                    let first = sql[i + 1..].chars().next();
                    if b[e] == b'$' && !first.is_some_and(|c| c.is_ascii_digit()) {
                        let tag = &sql[i..=e];
                        let close = sql[e + 1..].find(tag).expect("unterminated dollar quote");
                        i = e + 1 + close + tag.len();
                        continue;
                    }
                }
            }
            b';' => {
                let s = sql[start..i].trim();
                if !s.is_empty() {
                    out.push(s.to_string());
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    assert!(sql[start..].trim().is_empty() || uncommented(&sql[start..]).trim().is_empty());
    out
}

/// A statement as written, without the comment lines before it.
fn bare(s: &str) -> &str {
    let mut s = s.trim_start();
    while s.starts_with("--") {
        s = s[s.find('\n').map_or(s.len(), |n| n + 1)..].trim_start();
    }
    s
}

/// A statement without its comments outside quotes.
fn uncommented(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = s[i..].find('\n').map_or(b.len(), |n| i + n);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = s[i..].find("*/").map_or(b.len(), |n| i + n + 2);
                out.push(' ');
                i = end;
                continue;
            }
            q @ (b'\'' | b'"' | b'$') => {
                // copied whole: a quoted string, identifier or dollar-quoted body
                let end = if q == b'$' {
                    let e = s[i + 1..].find('$').map(|n| i + 1 + n);
                    match e {
                        Some(e)
                            if s[i + 1..e]
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '_')
                                && !s[i + 1..].starts_with(|c: char| c.is_ascii_digit()) =>
                        {
                            let tag = &s[i..=e];
                            s[e + 1..]
                                .find(tag)
                                .map_or(b.len(), |n| e + 1 + n + tag.len())
                        }
                        _ => i + 1,
                    }
                } else {
                    let mut j = i + 1;
                    while j < b.len() {
                        if b[j] == q {
                            if b.get(j + 1) == Some(&q) {
                                j += 2;
                                continue;
                            }
                            break;
                        }
                        j += 1;
                    }
                    (j + 1).min(b.len())
                };
                out.push_str(&s[i..end]);
                i = end;
                continue;
            }
            _ => {}
        }
        let c = s[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// A statement in the form compared: no comments outside quotes, whitespace collapsed,
/// `CREATE OR REPLACE` as `CREATE`, no `@extschema@.` before the object's name.
fn normal(s: &str) -> String {
    let words = uncommented(s)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let words = words.replace("CREATE OR REPLACE FUNCTION ", "CREATE FUNCTION ");
    words
        .replace("FUNCTION @extschema@.", "FUNCTION ")
        .replace("FUNCTION IF EXISTS @extschema@.", "FUNCTION IF EXISTS ")
}

/// A function's identity, `name(type, ...)` with the argument types only (no names, modes
/// IN, no OUT arguments, no defaults), from the text after `FUNCTION `.
fn identity(after_function: &str) -> String {
    let s = after_function.trim();
    let s = s.strip_prefix("IF EXISTS ").unwrap_or(s);
    let open = s.find('(').unwrap_or(s.len());
    let name = s[..open]
        .trim()
        .trim_start_matches("@extschema@.")
        .trim_matches('"');
    if open == s.len() {
        return format!("{name}(*)"); // DROP FUNCTION name: whatever its arguments
    }
    let mut depth = 0;
    let mut close = open;
    for (i, c) in s.char_indices().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = i;
                    break;
                }
            }
            _ => {}
        }
    }
    let mut types = Vec::new();
    let mut depth = 0;
    let mut arg = String::new();
    for c in s[open + 1..close].chars().chain(std::iter::once(',')) {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                if let Some(t) = arg_type(&arg) {
                    types.push(t);
                }
                arg.clear();
                continue;
            }
            _ => {}
        }
        arg.push(c);
    }
    format!("{}({})", name.to_lowercase(), types.join(", "))
}

/// The type of one argument as written in `CREATE FUNCTION` (`seq text DEFAULT NULL`,
/// `OUT ts timestamptz`, `gdid`), None for an OUT argument.
fn arg_type(arg: &str) -> Option<String> {
    let arg = arg
        .split(" DEFAULT ")
        .next()
        .unwrap()
        .split(" = ")
        .next()
        .unwrap();
    let mut words: Vec<String> = arg.split_whitespace().map(str::to_lowercase).collect();
    if words.is_empty() {
        return None;
    }
    match words[0].as_str() {
        "out" => return None,
        "in" | "inout" | "variadic" => {
            words.remove(0);
        }
        _ => {}
    }
    const MULTIWORD: &[&str] = &[
        "double",
        "character",
        "bit",
        "timestamp",
        "time",
        "interval",
    ];
    if words.len() >= 2 && !MULTIWORD.contains(&words[0].as_str()) {
        words.remove(0); // the argument's name
    }
    let ty = words.join(" ");
    Some(
        match ty.as_str() {
            "int" | "int4" => "integer",
            "int8" => "bigint",
            "bool" => "boolean",
            "timestamp with time zone" => "timestamptz",
            other => other,
        }
        .to_string(),
    )
}

/// What a script does to functions, by identity.
#[derive(Default)]
struct Script {
    /// `CREATE [OR REPLACE] FUNCTION`: the statement as written, and normal.
    creates: BTreeMap<String, Vec<(String, String)>>,
    /// `COMMENT ON FUNCTION`: as written, and normal.
    comments: BTreeMap<String, (String, String)>,
    /// `GRANT`/`REVOKE ... ON FUNCTION`: as written, normal, and the functions it names.
    grants: Vec<(String, String, Vec<String>)>,
    /// `DROP FUNCTION`, each function it names, with the position of the statement.
    drops: Vec<(usize, String)>,
    /// The position of each `CREATE FUNCTION`.
    created_at: Vec<(usize, String)>,
}

fn functions_of(sql: &str) -> Script {
    let mut script = Script::default();
    for (pos, stmt) in statements(sql).into_iter().enumerate() {
        let n = normal(&stmt);
        if let Some(rest) = n.strip_prefix("CREATE FUNCTION ") {
            let id = identity(rest);
            script.created_at.push((pos, id.clone()));
            script
                .creates
                .entry(id)
                .or_default()
                .push((bare(&stmt).to_string(), n));
        } else if let Some(rest) = n.strip_prefix("COMMENT ON FUNCTION ") {
            script
                .comments
                .insert(identity(rest), (bare(&stmt).to_string(), n));
        } else if (n.starts_with("GRANT ") || n.starts_with("REVOKE "))
            && n.contains(" ON FUNCTION ")
        {
            let list = &n[n.find(" ON FUNCTION ").unwrap() + " ON FUNCTION ".len()..];
            let list = list
                .split(" TO ")
                .next()
                .unwrap()
                .split(" FROM ")
                .next()
                .unwrap();
            script
                .grants
                .push((bare(&stmt).to_string(), n.clone(), split_functions(list)));
        } else if let Some(rest) = n.strip_prefix("DROP FUNCTION ") {
            let rest = rest.strip_prefix("IF EXISTS ").unwrap_or(rest);
            let rest = rest
                .trim_end_matches(" CASCADE")
                .trim_end_matches(" RESTRICT");
            for f in split_functions(rest) {
                script.drops.push((pos, f));
            }
        }
    }
    script
}

/// `f(a, b), g()`: the identities of a list of functions.
fn split_functions(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in list
        .char_indices()
        .chain(std::iter::once((list.len(), ',')))
    {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(identity(&list[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// Everything the update script lacks, one message each (with the statement to add).
fn update_problems(install: &str, previous: &str, update: &str, update_name: &str) -> Vec<String> {
    let now = functions_of(install);
    let before = functions_of(previous);
    let upd = functions_of(update);
    let mut problems = Vec::new();
    let dropped_by_update: BTreeSet<&String> = upd.drops.iter().map(|(_, f)| f).collect();
    let drops_any = |id: &String| {
        let name = id.split('(').next().unwrap();
        dropped_by_update.contains(id) || dropped_by_update.contains(&format!("{name}(*)"))
    };
    // the functions the update script must create: new, changed or dropped by it
    for (id, made) in &now.creates {
        let (stmt, n) = made.last().unwrap();
        let unchanged = before
            .creates
            .get(id)
            .is_some_and(|b| b.iter().any(|(_, bn)| bn == n));
        if unchanged && !drops_any(id) {
            continue;
        }
        match upd.creates.get(id) {
            Some(u) if u.iter().any(|(_, un)| un == n) => {}
            Some(u) => problems.push(format!(
                "{id} is created in {update_name} otherwise than in the install script; there:\n{}\ninstead of:\n{};",
                u.last().unwrap().0,
                stmt
            )),
            None => {
                let how = if drops_any(id) {
                    format!("dropped there and not made again; add:\n{stmt};")
                } else if before.creates.contains_key(id) {
                    format!(
                        "changed since the previous release; add (or DROP FUNCTION and CREATE FUNCTION if its result or argument names changed):\n{};",
                        stmt.replacen("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
                    )
                } else {
                    format!("new; add:\n{stmt};")
                };
                problems.push(format!("{id} is missing from {update_name}: {how}"));
            }
        }
    }
    for (id, (stmt, n)) in &now.comments {
        // CREATE OR REPLACE keeps a comment; a new function or one dropped and made again
        // needs it
        let unchanged = before.comments.get(id).is_some_and(|(_, bn)| bn == n);
        if unchanged && !drops_any(id) || upd.comments.get(id).is_some_and(|(_, un)| un == n) {
            continue;
        }
        problems.push(format!(
            "the comment of {id} is missing from {update_name}; add:\n{stmt};"
        ));
    }
    for (stmt, n, names) in &now.grants {
        let unchanged = before.grants.iter().any(|(_, bn, _)| bn == n);
        let made_anew = names
            .iter()
            .any(|f| !before.creates.contains_key(f) || drops_any(f));
        if unchanged && !made_anew || upd.grants.iter().any(|(_, un, _)| un == n) {
            continue;
        }
        problems.push(format!(
            "a privilege of {} is missing from {update_name}; add:\n{stmt};",
            names.join(", ")
        ));
    }
    for id in before.creates.keys() {
        if !now.creates.contains_key(id) && !drops_any(id) {
            problems.push(format!(
                "{id} of the previous release is gone from the install script but not dropped by {update_name}; add:\nDROP FUNCTION {id};"
            ));
        }
    }
    for (pos, id) in &upd.created_at {
        let dropped_later = upd.drops.iter().any(|(p, f)| p > pos && f == id);
        if !now.creates.contains_key(id) && !dropped_later {
            problems.push(format!(
                "{update_name} creates {id}, which the install script does not: drop it there, or add it to the install script"
            ));
        }
    }
    problems
}

#[test]
fn update_script_creates_every_new_or_changed_function() {
    let root = root();
    let current = current_version(&read(&root.join("Cargo.toml")));
    let names: Vec<String> = std::fs::read_dir(root.join("sql"))
        .expect("sql/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let previous = released(&names)
        .into_iter()
        .rfind(|v| version_key(v) < version_key(&current))
        .expect("an install script of an earlier release in sql/");
    let update_name = format!("sql/snowflake_id--{previous}--{current}.sql");
    let update_path = root.join(&update_name);
    assert!(
        update_path.exists(),
        "{update_name} is missing: the update from release {previous} to {current} (Cargo.toml)"
    );
    let files = install_files(&read(&root.join("src/lib.rs")));
    assert!(
        files.len() >= 2,
        "extension_sql_file! in src/lib.rs: {files:?}"
    );
    let install: String = files
        .iter()
        .map(|f| read(&root.join("src").join(f)) + "\n")
        .collect();
    let previous_sql = read(&root.join(format!("sql/snowflake_id--{previous}.sql")));
    let problems = update_problems(&install, &previous_sql, &read(&update_path), &update_name);
    assert!(
        problems.is_empty(),
        "{} problem(s) with {update_name}:\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// Install-script files whose every object is new in one release: the updates from the
/// release before it up to the current one make them as the file does now (the file is the
/// install script's source; its copies in the update scripts must not drift). Each statement
/// of the file is in one of those update scripts: the one into the release that made it, or a
/// later one that changed it. Functions are checked above for every file; this covers the
/// tables, views, grants and comments too.
const NEW_WHOLE: &[(&str, &str)] = &[("0.4.0", "sql/node.sql")];

#[test]
fn update_script_makes_the_objects_of_a_new_file_as_the_file_does() {
    let root = root();
    let current = current_version(&read(&root.join("Cargo.toml")));
    let names: Vec<String> = std::fs::read_dir(root.join("sql"))
        .expect("sql/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let releases = released(&names);
    for (release, file) in NEW_WHOLE {
        // The release before it, then every release up to the current version.
        let mut chain: Vec<&str> = releases
            .iter()
            .rfind(|v| version_key(v) < version_key(release))
            .into_iter()
            .chain(releases.iter().filter(|v| {
                version_key(v) >= version_key(release) && version_key(v) < version_key(&current)
            }))
            .map(String::as_str)
            .collect();
        chain.push(&current);
        let updates: Vec<String> = chain
            .windows(2)
            .map(|w| format!("sql/snowflake_id--{}--{}.sql", w[0], w[1]))
            .collect();
        let made: Vec<String> = updates
            .iter()
            .flat_map(|u| statements(&read(&root.join(u))))
            .map(|st| normal(&st))
            .collect();
        let missing: Vec<String> = statements(&read(&root.join("src").join(file)))
            .iter()
            .map(|st| normal(st))
            .filter(|st| !made.contains(st))
            .collect();
        assert!(
            missing.is_empty(),
            "{} lack (or write otherwise) {} statement(s) of src/{file}:\n\n{}",
            updates.join(", "),
            missing.len(),
            missing.join("\n\n")
        );
    }
}

#[test]
fn statements_respect_quotes_and_comments() {
    let sql = "\\echo Use \"ALTER EXTENSION\" \\quit\n-- a; comment\nCREATE FUNCTION f(a text) RETURNS text LANGUAGE sql AS $x$ SELECT ';' $x$;\n\
               /* b; /* nested; */ */ COMMENT ON FUNCTION f(text) IS 'it''s; one';\nSELECT $1;";
    let s = statements(sql);
    assert_eq!(s.len(), 3, "{s:#?}");
    assert!(s[0].starts_with("-- a; comment\nCREATE FUNCTION f(a text)"));
    assert!(s[1].ends_with("IS 'it''s; one'"));
    assert_eq!(
        normal(&s[0]),
        "CREATE FUNCTION f(a text) RETURNS text LANGUAGE sql AS $x$ SELECT ';' $x$"
    );
}

#[test]
fn identities_keep_argument_types_only() {
    assert_eq!(
        identity("@extschema@.f(seq text, n int DEFAULT 1, OUT x bigint) RETURNS"),
        "f(text, integer)"
    );
    assert_eq!(
        identity("gdid_in(cstring) RETURNS gdid"),
        "gdid_in(cstring)"
    );
    assert_eq!(
        identity("g(col name, t timestamp with time zone, double precision)"),
        "g(name, timestamptz, double precision)"
    );
    assert_eq!(identity("IF EXISTS h"), "h(*)");
}

#[test]
fn the_check_finds_what_an_update_script_lacks() {
    let previous = "CREATE FUNCTION a() RETURNS int LANGUAGE sql RETURN 1;\n\
                    COMMENT ON FUNCTION a() IS 'a';\n\
                    CREATE FUNCTION gone() RETURNS int LANGUAGE sql RETURN 1;";
    let install = "CREATE FUNCTION a() RETURNS int\n    LANGUAGE sql RETURN 1;\n\
                   COMMENT ON FUNCTION a() IS 'a';\n\
                   CREATE FUNCTION @extschema@.b(x text) RETURNS int LANGUAGE sql RETURN 2;\n\
                   COMMENT ON FUNCTION b(text) IS 'b';\n\
                   REVOKE EXECUTE ON FUNCTION b(text) FROM PUBLIC;";
    // unchanged a needs nothing; b is new, gone is gone
    let p = update_problems(install, previous, "", "u.sql");
    assert_eq!(p.len(), 4, "{p:#?}");
    assert!(p[0].starts_with(
        "b(text) is missing from u.sql: new; add:\nCREATE FUNCTION @extschema@.b(x text)"
    ));
    assert!(p[1].starts_with("the comment of b(text)"));
    assert!(p[2].starts_with("a privilege of b(text)"));
    assert!(p[3].starts_with("gone() of the previous release"));
    let update = "CREATE OR REPLACE FUNCTION b(x text) RETURNS int LANGUAGE sql RETURN 2;\n\
                  COMMENT ON FUNCTION b(text) IS 'b';\n\
                  REVOKE EXECUTE ON FUNCTION b(text) FROM PUBLIC;\n\
                  DROP FUNCTION gone();\n\
                  CREATE FUNCTION helper() RETURNS int LANGUAGE sql RETURN 0; SELECT helper(); DROP FUNCTION helper();";
    assert_eq!(
        update_problems(install, previous, update, "u.sql"),
        Vec::<String>::new()
    );
    // b created otherwise; a changed and missing
    let changed = install
        .replace("RETURN 1;\nCOMMENT", "RETURN 3;\nCOMMENT")
        .replace("RETURN 2", "RETURN 4");
    let p = update_problems(&changed, previous, update, "u.sql");
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(p[0].starts_with("a() is missing from u.sql: changed since the previous release"));
    assert!(p[1].starts_with("b(text) is created in u.sql otherwise"));
    // a function the update script drops and makes again needs its comment again
    let p = update_problems(
        install,
        previous,
        &format!(
            "{update}\nDROP FUNCTION a();\n{}",
            "CREATE FUNCTION a() RETURNS int LANGUAGE sql RETURN 1;"
        ),
        "u.sql",
    );
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].starts_with("the comment of a()"));
    // and one it drops without making it again is missing
    let p = update_problems(
        install,
        previous,
        &format!("{update}\nDROP FUNCTION a;"),
        "u.sql",
    );
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(p[0].starts_with("a() is missing from u.sql: dropped there and not made again"));
}
