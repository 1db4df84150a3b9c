//! The tokens of TorchScript source, in logical lines (a line continues
//! while a bracket is open), each with its indent and line number; every
//! bound (bracket depth, token count) checked as it is read.

use ferrotorch_core::{ensure, Error, ErrorKind, Result};

use super::parse::{MAX_DEPTH, MAX_TOKENS};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Str(String),
    Punct(&'static str),
}

/// One logical line: its indent, first physical line number and tokens.
pub(super) struct Line {
    pub indent: usize,
    pub number: usize,
    pub toks: Vec<Tok>,
}

pub(super) fn err(file: &str, line: usize, msg: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Runtime,
        format!("jit.load: {file}, line {line}: {msg}"),
    )
}

const PUNCT: [&str; 15] = [
    "->", "**", "==", "!=", "(", ")", "[", "]", ",", ".", "=", ":", "-", "+", "*",
];

/// Split `src` into logical lines (a line continues while a bracket is
/// open), each tokenised.
pub(super) fn lines(src: &str, file: &str) -> Result<Vec<Line>> {
    let mut out: Vec<OpenLine> = Vec::new();
    let mut depth = 0usize;
    let mut total = 0usize;
    for (k, raw) in src.lines().enumerate() {
        let number = k + 1;
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        let b = raw.as_bytes();
        let mut i = indent;
        let mut toks = Vec::new();
        while i < b.len() {
            let c = b[i];
            if c == b' ' || c == b'\t' || c == b'\r' {
                i += 1;
            } else if c == b'#' {
                break;
            } else if c.is_ascii_alphabetic() || c == b'_' {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                toks.push(Tok::Ident(raw[s..i].to_string()));
            } else if c.is_ascii_digit()
                || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
            {
                let s = i;
                let mut float = false;
                while i < b.len() {
                    let d = b[i];
                    if d.is_ascii_digit() {
                        i += 1;
                    } else if d == b'.' {
                        float = true;
                        i += 1;
                    } else if (d == b'e' || d == b'E') && i > s {
                        float = true;
                        i += 1;
                        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
                            i += 1;
                        }
                    } else {
                        break;
                    }
                }
                let text = &raw[s..i];
                toks.push(if float {
                    Tok::Float(
                        text.parse()
                            .map_err(|_| err(file, number, format_args!("bad number {text:?}")))?,
                    )
                } else {
                    // 9223372036854775807 is written in full; larger is an error
                    Tok::Int(
                        text.parse()
                            .map_err(|_| err(file, number, format_args!("bad integer {text:?}")))?,
                    )
                });
            } else if c == b'"' || c == b'\'' {
                let mut s = String::new();
                i += 1;
                loop {
                    let Some(&d) = b.get(i) else {
                        return Err(err(file, number, "an unterminated string"));
                    };
                    i += 1;
                    if d == c {
                        break;
                    }
                    if d == b'\\' {
                        let e = *b
                            .get(i)
                            .ok_or_else(|| err(file, number, "an unterminated string"))?;
                        i += 1;
                        s.push(match e {
                            b'n' => '\n',
                            b't' => '\t',
                            b'r' => '\r',
                            b'0' => '\0',
                            other => other as char,
                        });
                    } else {
                        // keep UTF-8 sequences whole
                        let start = i - 1;
                        let mut end = i;
                        while end < b.len() && (b[end] & 0xC0) == 0x80 {
                            end += 1;
                        }
                        s.push_str(&raw[start..end]);
                        i = end;
                    }
                }
                toks.push(Tok::Str(s));
            } else if let Some(p) = PUNCT.iter().find(|p| raw[i..].starts_with(**p)) {
                match *p {
                    "(" | "[" => depth += 1,
                    ")" | "]" => {
                        depth = depth
                            .checked_sub(1)
                            .ok_or_else(|| err(file, number, "an unmatched closing bracket"))?
                    }
                    _ => {}
                }
                ensure!(
                    depth <= MAX_DEPTH,
                    Runtime,
                    "jit.load: {file}, line {number}: brackets nested more than {MAX_DEPTH} deep"
                );
                toks.push(Tok::Punct(p));
                i += p.len();
            } else {
                return Err(err(
                    file,
                    number,
                    format_args!(
                        "unexpected character {:?}",
                        raw[i..].chars().next().unwrap_or(' ')
                    ),
                ));
            }
        }
        total += toks.len();
        ensure!(
            total <= MAX_TOKENS,
            Runtime,
            "jit.load: {file} is longer than this reader takes"
        );
        // a line inside open brackets continues the previous one
        let continues = out.last().is_some_and(|l| l.open);
        if continues {
            let last = out.last_mut().expect("checked");
            last.line.toks.extend(toks);
            last.open = depth > 0;
        } else if !toks.is_empty() {
            out.push(OpenLine {
                line: Line {
                    indent,
                    number,
                    toks,
                },
                open: depth > 0,
            });
        }
    }
    ensure!(depth == 0, Runtime, "jit.load: {file} ends inside brackets");
    Ok(out.into_iter().map(|l| l.line).collect())
}

/// A logical line being read, and whether a bracket is still open.
struct OpenLine {
    line: Line,
    open: bool,
}
