//! What `CreateProcessAsUserW` is given to run a spec on Windows: the program
//! found on the child's `PATH` with `PATHEXT` ([`resolve`]), and the command
//! line, quoted for the C runtime's argument parser, or for `cmd.exe` when
//! the program is a `.cmd`/`.bat` script ([`launch`]) — `npx.cmd` is how
//! most Windows MCP servers start, and `CreateProcess` cannot run a script.
//! Pure (Windows paths handled as text), tested on every system.

use crate::error::{Error, Result, codes};

/// `PATHEXT` when the child's environment names none (Windows' own default).
pub const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// How a resolved program is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// An `.exe` or `.com`: `CreateProcess` runs it itself.
    Executable,
    /// A `.cmd` or `.bat` script: run by `cmd.exe`.
    Script,
}

/// What to start: the application `CreateProcess` opens, and its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub application: String,
    pub command_line: String,
}

fn is_separator(c: char) -> bool {
    c == '\\' || c == '/'
}

fn has_dir(program: &str) -> bool {
    program.contains(is_separator) || program.contains(':')
}

/// The extension of the last component, with its dot (`.cmd`), if any.
fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit(is_separator).next().unwrap_or(path);
    name.rfind('.').filter(|i| *i > 0).map(|i| &name[i..])
}

/// The kind of a program by its extension, or why it cannot be started.
pub fn kind(path: &str) -> Result<Kind> {
    match extension(path).map(str::to_ascii_lowercase).as_deref() {
        Some(".exe" | ".com") => Ok(Kind::Executable),
        Some(".cmd" | ".bat") => Ok(Kind::Script),
        other => Err(Error::invalid(
            codes::SPAWN_FAILED,
            format!(
                "{path} cannot be started directly (its extension is {})",
                other.unwrap_or("missing")
            ),
            "give an .exe, .com, .cmd or .bat; run other scripts through their interpreter, e.g. node server.js or powershell.exe -File server.ps1",
        )),
    }
}

/// Finds `program` as the child would: as given when it names a folder
/// (trying each `PATHEXT` extension when it has none), else in each folder of
/// `path` (the child's `PATH`; the host's is not used), the name as given
/// first if it has an extension, then with each extension. `exists` says
/// whether a file is there.
pub fn resolve(
    program: &str,
    path: &str,
    pathext: &str,
    exists: impl Fn(&str) -> bool,
) -> Option<String> {
    let exts: Vec<&str> = pathext
        .split(';')
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .collect();
    let candidates = |base: &str| -> Vec<String> {
        let mut out = Vec::new();
        if extension(base).is_some() {
            out.push(base.to_string());
        }
        out.extend(exts.iter().map(|e| format!("{base}{e}")));
        out
    };
    if has_dir(program) {
        return candidates(program).into_iter().find(|c| exists(c));
    }
    path.split(';')
        .map(|d| d.trim_matches('"'))
        .filter(|d| !d.is_empty())
        .flat_map(|d| candidates(&format!("{}\\{program}", d.trim_end_matches(is_separator))))
        .find(|c| exists(c))
}

/// One argument quoted so the C runtime's parser (`CommandLineToArgvW`'s
/// rules) gives it back unchanged.
pub fn quote_arg(arg: &str, out: &mut String) {
    if !arg.is_empty() && !arg.contains([' ', '\t', '\n', '\x0b', '"']) {
        out.push_str(arg);
        return;
    }
    out.push('"');
    let mut backslashes = 0;
    for c in arg.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                // Backslashes before a quote are doubled, and the quote escaped.
                out.extend(std::iter::repeat_n('\\', backslashes * 2 + 1));
                out.push('"');
                backslashes = 0;
            }
            c => {
                out.extend(std::iter::repeat_n('\\', backslashes));
                out.push(c);
                backslashes = 0;
            }
        }
    }
    // Trailing backslashes are doubled: the closing quote must stay a quote.
    out.extend(std::iter::repeat_n('\\', backslashes * 2));
    out.push('"');
}

/// One argument for a script run by `cmd.exe`, always quoted: inside quotes
/// `cmd` takes `& | < > ( ) ^` literally (and `!` too, with delayed expansion
/// off). What it would still interpret is refused: `%` (expanded even in
/// quotes), `"` (ends the quoting), line breaks and NUL. Trailing
/// backslashes are doubled so a script passing `%*` on to an `.exe` (as
/// `npx.cmd` does to `node.exe`) does not hand it an escaped quote.
fn quote_script_arg(arg: &str, out: &mut String) -> Result<()> {
    if let Some(c) = arg
        .chars()
        .find(|c| matches!(c, '%' | '"' | '\r' | '\n' | '\0'))
    {
        return Err(Error::invalid(
            codes::SPAWN_FAILED,
            format!(
                "the argument {arg:?} cannot be passed safely to a .cmd/.bat script (it holds {c:?}, which cmd.exe interprets even inside quotes)"
            ),
            "remove the character, or start the program the script runs (e.g. node.exe with the script's file) directly",
        ));
    }
    out.push('"');
    out.push_str(arg);
    let trailing = arg.len() - arg.trim_end_matches('\\').len();
    out.extend(std::iter::repeat_n('\\', trailing));
    out.push('"');
    Ok(())
}

/// What to start for `resolved` (from [`resolve`]) with `args`. A script runs
/// as `cmd.exe /d /v:off /s /c ""script" "arg"…"`: `/d` skips the AutoRun
/// commands of the registry, `/v:off` keeps `!` literal, `/s` makes `cmd`
/// strip exactly the outer pair of quotes. `cmd` is `%SystemRoot%\System32\cmd.exe`.
pub fn launch(resolved: &str, args: &[String], cmd: &str) -> Result<Launch> {
    match kind(resolved)? {
        Kind::Executable => {
            let mut line = String::new();
            quote_arg(resolved, &mut line);
            for a in args {
                line.push(' ');
                quote_arg(a, &mut line);
            }
            Ok(Launch {
                application: resolved.to_string(),
                command_line: line,
            })
        }
        Kind::Script => {
            let mut inner = String::new();
            quote_script_arg(resolved, &mut inner)?;
            for a in args {
                inner.push(' ');
                quote_script_arg(a, &mut inner)?;
            }
            let mut line = String::new();
            quote_arg(cmd, &mut line);
            line.push_str(" /d /v:off /s /c \"");
            line.push_str(&inner);
            line.push('"');
            Ok(Launch {
                application: cmd.to_string(),
                command_line: line,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C runtime's parser (`CommandLineToArgvW` rules, 2008 and later),
    /// to check [`quote_arg`] against.
    fn parse(line: &str) -> Vec<String> {
        let mut args = Vec::new();
        let mut chars = line.chars().peekable();
        loop {
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            if chars.peek().is_none() {
                return args;
            }
            let mut arg = String::new();
            let mut quoted = false;
            while let Some(&c) = chars.peek() {
                if !quoted && (c == ' ' || c == '\t') {
                    break;
                }
                chars.next();
                match c {
                    '\\' => {
                        let mut n = 1;
                        while chars.peek() == Some(&'\\') {
                            chars.next();
                            n += 1;
                        }
                        if chars.peek() == Some(&'"') {
                            arg.extend(std::iter::repeat_n('\\', n / 2));
                            if n % 2 == 1 {
                                chars.next();
                                arg.push('"');
                            }
                        } else {
                            arg.extend(std::iter::repeat_n('\\', n));
                        }
                    }
                    '"' if quoted && chars.peek() == Some(&'"') => {
                        chars.next();
                        arg.push('"');
                    }
                    '"' => quoted = !quoted,
                    c => arg.push(c),
                }
            }
            args.push(arg);
        }
    }

    #[test]
    fn quoted_arguments_come_back_unchanged() {
        let cases = [
            "plain",
            "",
            "with space",
            r"C:\Program Files\node\",
            r#"say "hi""#,
            r#"back\"slash"#,
            r"trailing\\",
            "tab\there",
            "Zoë 東京",
            r#"\\server\share\"#,
        ];
        let mut line = String::from("prog.exe");
        for c in cases {
            line.push(' ');
            quote_arg(c, &mut line);
        }
        let parsed = parse(&line);
        assert_eq!(parsed[0], "prog.exe");
        assert_eq!(&parsed[1..], cases.map(String::from));
    }

    #[test]
    fn programs_resolve_through_path_and_pathext() {
        let files = [
            r"C:\Program Files\nodejs\npx.cmd",
            r"C:\Program Files\nodejs\node.exe",
            r"C:\tools\server.BAT",
            r"C:\tools\npx.ps1",
            r"D:\Zoë's tools\srv.exe",
        ];
        let exists = |p: &str| files.iter().any(|f| f.eq_ignore_ascii_case(p));
        let path = r#"C:\Windows\System32;"C:\Program Files\nodejs\";C:\tools;D:\Zoë's tools"#;
        let r = |p: &str| resolve(p, path, DEFAULT_PATHEXT, exists);
        assert_eq!(
            r("npx").as_deref(),
            Some(r"C:\Program Files\nodejs\npx.CMD")
        );
        assert_eq!(
            r("node").as_deref(),
            Some(r"C:\Program Files\nodejs\node.EXE")
        );
        assert_eq!(
            r("npx.cmd").as_deref(),
            Some(r"C:\Program Files\nodejs\npx.cmd")
        );
        assert_eq!(r("server").as_deref(), Some(r"C:\tools\server.BAT"));
        assert_eq!(r("srv").as_deref(), Some(r"D:\Zoë's tools\srv.EXE"));
        assert_eq!(
            r(r"C:\tools\server").as_deref(),
            Some(r"C:\tools\server.BAT")
        );
        assert_eq!(
            r(r"C:\tools\server.bat").as_deref(),
            Some(r"C:\tools\server.bat")
        );
        assert_eq!(r("missing"), None);
        // A .ps1 is not in PATHEXT: not found by its bare name.
        assert_eq!(r("npx.ps1").as_deref(), Some(r"C:\tools\npx.ps1"));
        assert!(kind(r"C:\tools\npx.ps1").is_err());
        // The child's PATHEXT rules, not the default.
        assert_eq!(resolve("npx", path, ".EXE", exists), None);
    }

    #[test]
    fn an_exe_gets_its_application_and_a_quoted_line() {
        let l = launch(
            r"C:\Program Files\nodejs\node.exe",
            &[
                "C:\\Users\\Zoë\\server dir\\index.js".into(),
                "--flag".into(),
            ],
            r"C:\Windows\System32\cmd.exe",
        )
        .unwrap();
        assert_eq!(l.application, r"C:\Program Files\nodejs\node.exe");
        assert_eq!(
            parse(&l.command_line),
            [
                r"C:\Program Files\nodejs\node.exe",
                "C:\\Users\\Zoë\\server dir\\index.js",
                "--flag"
            ]
        );
    }

    #[test]
    fn a_script_runs_through_cmd_with_every_part_quoted() {
        let l = launch(
            r"C:\Program Files\nodejs\npx.cmd",
            &[
                "-y".into(),
                "@scope/server".into(),
                r"C:\My Files\".into(),
                "a&b|c<d>e^f(g)!".into(),
            ],
            r"C:\Windows\System32\cmd.exe",
        )
        .unwrap();
        assert_eq!(l.application, r"C:\Windows\System32\cmd.exe");
        assert_eq!(
            l.command_line,
            r#"C:\Windows\System32\cmd.exe /d /v:off /s /c ""C:\Program Files\nodejs\npx.cmd" "-y" "@scope/server" "C:\My Files\\" "a&b|c<d>e^f(g)!"""#
        );
    }

    #[test]
    fn script_arguments_cmd_would_interpret_are_refused() {
        for bad in ["%PATH%", r#"x" & calc.exe & ""#, "two\nlines", "cr\r"] {
            let e = launch(
                r"C:\s.cmd",
                &[bad.to_string()],
                r"C:\Windows\System32\cmd.exe",
            )
            .expect_err(bad);
            assert_eq!(e.code, codes::SPAWN_FAILED);
            assert!(e.hint.is_some());
        }
        assert!(launch(r"C:\100%\s.bat", &[], "cmd.exe").is_err());
    }
}
