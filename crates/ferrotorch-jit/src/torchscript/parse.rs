//! The TorchScript source that `torch.jit.trace(...).save()` writes
//! (`code/__torch__/**.py`), parsed into classes of straight-line
//! methods (Note [Loading TorchScript archives]). The grammar is the
//! subset tracing emits: assignments (to a name or a tuple of names),
//! `return`, and expressions of names, attribute reads, calls with
//! positional and keyword arguments, lists, tuples and constants.
//! Anything else (`if`, loops, `with`, ...) is an error naming the
//! construct and its line.

use super::lex::{err, lines, Line, Tok};
use ferrotorch_core::{bail, ensure, Error, Result};

/// Bounds on what one file may hold, checked as it is read.
pub(super) const MAX_DEPTH: usize = 64;
pub(super) const MAX_TOKENS: usize = 1 << 22;

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    Name(String),
    Attr(Box<Expr>, String),
    Call {
        func: Box<Expr>,
        args: Vec<Expr>,
        kwargs: Vec<(String, Expr)>,
    },
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    /// `a[b]`: only types (`List[int]`) in traced code.
    Subscript(Box<Expr>, Vec<Expr>),
}

/// A statement of a method body.
#[derive(Clone, Debug)]
pub(crate) enum Stmt {
    /// `a = e` or `a, b, = e`.
    Assign {
        targets: Vec<String>,
        tuple: bool,
        value: Expr,
        line: usize,
    },
    /// `return e`.
    Return(Expr, usize),
}

/// A method: its argument names (without `self`) and body.
#[derive(Clone, Debug)]
pub(crate) struct Method {
    pub name: String,
    pub args: Vec<String>,
    pub body: Vec<Stmt>,
}

/// A class of a code file: its name (unqualified) and methods.
#[derive(Clone, Debug)]
pub(crate) struct Class {
    pub name: String,
    pub methods: Vec<Method>,
}

/// A cursor over one logical line's tokens.
struct P<'a> {
    toks: &'a [Tok],
    at: usize,
    file: &'a str,
    line: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.is(p) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<()> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.err(format_args!("expected '{p}'")))
        }
    }

    fn err(&self, msg: impl std::fmt::Display) -> Error {
        let near = match self.peek() {
            Some(Tok::Ident(s)) => format!(" near '{s}'"),
            Some(Tok::Punct(s)) => format!(" near '{s}'"),
            Some(t) => format!(" near {t:?}"),
            None => " at the end of the line".to_string(),
        };
        err(self.file, self.line, format_args!("{msg}{near}"))
    }

    fn ident(&mut self) -> Result<String> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.at += 1;
                Ok(s)
            }
            _ => Err(self.err("expected a name")),
        }
    }

    fn done(&self) -> Result<()> {
        if self.at == self.toks.len() {
            Ok(())
        } else {
            Err(self.err("unexpected text"))
        }
    }

    /// Items up to `close`, separated by commas (a trailing one allowed);
    /// whether a comma was seen.
    fn items(&mut self, close: &str, depth: usize) -> Result<(Vec<Expr>, bool)> {
        let mut items = Vec::new();
        let mut comma = false;
        while !self.eat(close) {
            items.push(self.expr(depth + 1)?);
            if !self.eat(",") {
                self.expect(close)?;
                break;
            }
            comma = true;
        }
        Ok((items, comma))
    }

    fn expr(&mut self, depth: usize) -> Result<Expr> {
        ensure!(
            depth <= MAX_DEPTH,
            Runtime,
            "jit.load: {}, line {}: an expression nested more than {MAX_DEPTH} deep",
            self.file,
            self.line
        );
        let mut e = self.atom(depth)?;
        loop {
            if self.eat(".") {
                e = Expr::Attr(Box::new(e), self.ident()?);
            } else if self.eat("(") {
                let mut args = Vec::new();
                let mut kwargs = Vec::new();
                while !self.eat(")") {
                    let kw = match (self.peek(), self.toks.get(self.at + 1)) {
                        (Some(Tok::Ident(k)), Some(Tok::Punct("="))) => Some(k.clone()),
                        _ => None,
                    };
                    if let Some(k) = kw {
                        self.at += 2;
                        kwargs.push((k, self.expr(depth + 1)?));
                    } else {
                        ensure!(
                            kwargs.is_empty(),
                            Runtime,
                            "jit.load: {}, line {}: a positional argument after a keyword argument",
                            self.file,
                            self.line
                        );
                        args.push(self.expr(depth + 1)?);
                    }
                    if !self.eat(",") {
                        self.expect(")")?;
                        break;
                    }
                }
                e = Expr::Call {
                    func: Box::new(e),
                    args,
                    kwargs,
                };
            } else if self.eat("[") {
                e = Expr::Subscript(Box::new(e), self.items("]", depth)?.0);
            } else {
                return Ok(e);
            }
        }
    }

    fn atom(&mut self, depth: usize) -> Result<Expr> {
        let t = self
            .peek()
            .cloned()
            .ok_or_else(|| self.err("expected an expression"))?;
        self.at += 1;
        Ok(match t {
            Tok::Int(i) => Expr::Int(i),
            Tok::Float(f) => Expr::Float(f),
            Tok::Str(s) => Expr::Str(s),
            Tok::Ident(s) => match s.as_str() {
                "True" => Expr::Bool(true),
                "False" => Expr::Bool(false),
                "None" => Expr::None,
                "inf" => Expr::Float(f64::INFINITY),
                "nan" => Expr::Float(f64::NAN),
                "lambda" | "not" | "and" | "or" | "if" | "for" | "in" | "is" | "await"
                | "yield" => return Err(self.err(format_args!("'{s}' is not part of traced code"))),
                _ => Expr::Name(s),
            },
            Tok::Punct("-") => match self.atom(depth + 1)? {
                Expr::Int(i) => Expr::Int(-i),
                Expr::Float(f) => Expr::Float(-f),
                _ => return Err(self.err("'-' applies only to numbers in traced code")),
            },
            Tok::Punct("[") => Expr::List(self.items("]", depth)?.0),
            Tok::Punct("(") => {
                let (mut items, comma) = self.items(")", depth)?;
                if items.len() == 1 && !comma {
                    items.pop().expect("one item")
                } else {
                    Expr::Tuple(items)
                }
            }
            Tok::Punct(p) => return Err(self.err(format_args!("unexpected '{p}'"))),
        })
    }
}

/// The statement keywords tracing never emits.
const CONTROL: [&str; 14] = [
    "if", "elif", "else", "for", "while", "with", "try", "except", "finally", "raise", "assert",
    "break", "continue", "del",
];

fn statement(l: &Line, file: &str) -> Result<Stmt> {
    let mut p = P {
        toks: &l.toks,
        at: 0,
        file,
        line: l.number,
    };
    if let Some(Tok::Ident(k)) = p.peek() {
        if CONTROL.contains(&k.as_str()) {
            bail!(
                Runtime,
                "jit.load: {file}, line {}: '{k}' is control flow (torch.jit.script emits it, tracing never does); this loader runs traced programs only: trace the model with torch.jit.trace",
                l.number
            );
        }
        if k == "return" {
            p.at += 1;
            let e = if p.at == p.toks.len() {
                Expr::None
            } else {
                let first = p.expr(0)?;
                if p.eat(",") {
                    let mut items = vec![first];
                    while p.at < p.toks.len() {
                        items.push(p.expr(0)?);
                        if !p.eat(",") {
                            break;
                        }
                    }
                    Expr::Tuple(items)
                } else {
                    first
                }
            };
            p.done()?;
            return Ok(Stmt::Return(e, l.number));
        }
    }
    // targets: `a =` or `a, b, =`
    let mut targets = vec![p.ident()?];
    let mut tuple = false;
    while p.eat(",") {
        tuple = true;
        if p.is("=") {
            break;
        }
        targets.push(p.ident()?);
    }
    if p.is(":") {
        return Err(p.err("annotated assignments are not part of traced code"));
    }
    p.expect("=")?;
    let value = p.expr(0)?;
    p.done()?;
    Ok(Stmt::Assign {
        targets,
        tuple,
        value,
        line: l.number,
    })
}

/// `def name(self: T, a: Tensor, ...) -> T:`: the method's name and its
/// argument names after `self`.
fn signature(l: &Line, file: &str) -> Result<(String, Vec<String>)> {
    let mut p = P {
        toks: &l.toks,
        at: 1,
        file,
        line: l.number,
    };
    let name = p.ident()?;
    p.expect("(")?;
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut want_name = true;
    while let Some(t) = p.peek().cloned() {
        p.at += 1;
        match t {
            Tok::Punct("(") | Tok::Punct("[") => depth += 1,
            Tok::Punct(")") if depth == 0 => break,
            Tok::Punct(")") | Tok::Punct("]") => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| err(file, l.number, "an unmatched bracket in a signature"))?
            }
            Tok::Punct(",") if depth == 0 => want_name = true,
            Tok::Ident(s) if want_name => {
                args.push(s);
                want_name = false;
            }
            _ => {}
        }
    }
    ensure!(
        args.first().map(String::as_str) == Some("self"),
        Runtime,
        "jit.load: {file}, line {}: method {name} does not take self first",
        l.number
    );
    args.remove(0);
    Ok((name, args))
}

/// Parse one code file into its classes.
pub(crate) fn parse(src: &str, file: &str) -> Result<Vec<Class>> {
    let ls = lines(src, file)?;
    let mut classes: Vec<Class> = Vec::new();
    let mut i = 0;
    while i < ls.len() {
        let l = &ls[i];
        let head = match l.toks.first() {
            Some(Tok::Ident(s)) => s.as_str(),
            _ => "",
        };
        if l.indent == 0 {
            if head == "class" {
                let name = match l.toks.get(1) {
                    Some(Tok::Ident(n)) => n.clone(),
                    _ => return Err(err(file, l.number, "a class without a name")),
                };
                classes.push(Class {
                    name,
                    methods: Vec::new(),
                });
            } else if head == "def" {
                return Err(err(
                    file,
                    l.number,
                    "a free function (torch.jit.script emits these; tracing does not)",
                ));
            }
            // imports and `op_version_set = N` carry nothing to run
            i += 1;
            continue;
        }
        let Some(class) = classes.last_mut() else {
            return Err(err(file, l.number, "indented text outside a class"));
        };
        if head == "def" {
            let (name, args) = signature(l, file)?;
            let body_indent = ls.get(i + 1).map_or(0, |n| n.indent);
            let mut body = Vec::new();
            i += 1;
            while i < ls.len() && ls[i].indent > l.indent {
                if ls[i].indent != body_indent {
                    let first = match ls[i].toks.first() {
                        Some(Tok::Ident(s)) => s.clone(),
                        _ => String::new(),
                    };
                    return Err(err(
                        file,
                        ls[i].number,
                        format_args!(
                            "an indented block{} (control flow: traced code is straight-line)",
                            if first.is_empty() {
                                String::new()
                            } else {
                                format!(" after '{first}'")
                            }
                        ),
                    ));
                }
                body.push(statement(&ls[i], file)?);
                i += 1;
            }
            class.methods.push(Method { name, args, body });
            continue;
        }
        // attribute declarations (`weight : Tensor`, `__parameters__ =
        // [...]`): the pickled object is what holds the attributes
        i += 1;
    }
    Ok(classes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "class Net(Module):
  __parameters__ = [\"weight\", ]
  weight : Tensor
  def forward(self: __torch__.Net,
    x: Tensor,
    y: Tuple[Tensor, Tensor]) -> Tensor:
    weight = self.weight
    _0, _1, = (self.sub).forward(x, )
    _2 = torch.add(_0, weight, alpha=-1.5e-3)
    return (_2, [1, -2], \"s\")
";

    #[test]
    fn parses_traced_code() {
        let c = parse(SRC, "t.py").unwrap();
        assert_eq!(c.len(), 1);
        let m = &c[0].methods[0];
        assert_eq!(m.name, "forward");
        assert_eq!(m.args, vec!["x", "y"]);
        assert_eq!(m.body.len(), 4);
        match &m.body[1] {
            Stmt::Assign { targets, tuple, .. } => {
                assert_eq!(targets, &vec!["_0".to_string(), "_1".to_string()]);
                assert!(*tuple);
            }
            s => panic!("{s:?}"),
        }
        match &m.body[2] {
            Stmt::Assign {
                value: Expr::Call { kwargs, .. },
                ..
            } => {
                assert_eq!(kwargs[0], ("alpha".to_string(), Expr::Float(-1.5e-3)));
            }
            s => panic!("{s:?}"),
        }
        match &m.body[3] {
            Stmt::Return(Expr::Tuple(items), 10) => {
                assert_eq!(items[1], Expr::List(vec![Expr::Int(1), Expr::Int(-2)]));
                assert_eq!(items[2], Expr::Str("s".into()));
            }
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn refuses_control_flow_by_line() {
        let src = "class M(Module):\n  def forward(self: M, x: Tensor) -> Tensor:\n    if x:\n      y = x\n    return x\n";
        let e = parse(src, "m.py").unwrap_err().to_string();
        assert!(e.contains("m.py, line 3: 'if' is control flow"), "{e}");
        for bad in [
            "class M(Module):\n  def forward(self, x):\n    y = (x\n",
            "class M(Module):\n  def forward(self, x):\n    y = x[0\n",
        ] {
            assert!(parse(bad, "m.py").is_err());
        }
        // every truncation is an error or a shorter program, never a panic
        for n in 0..SRC.len() {
            let _ = parse(&SRC[..n], "t.py");
        }
        // a stray closing bracket in a signature (the fuzz target's find)
        let e = parse(
            "class M(Module):\n  def forward(self, x]) -> T:\n    return x\n",
            "m.py",
        )
        .unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
