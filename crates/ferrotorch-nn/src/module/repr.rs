//! The module tree printed the way PyTorch's `Module.__repr__` does.

use super::Module;

pub(crate) fn repr(m: &dyn Module) -> String {
    let extra = m.extra_repr();
    let extra_lines: Vec<String> = if extra.is_empty() {
        Vec::new()
    } else {
        extra.split('\n').map(str::to_string).collect()
    };
    let child_lines: Vec<String> = m
        .named_children()
        .into_iter()
        .map(|(name, c)| format!("({name}): {}", add_indent(&repr(c), 2)))
        .collect();
    let mut s = format!("{}(", m.type_name());
    if extra_lines.len() == 1 && child_lines.is_empty() {
        s.push_str(&extra_lines[0]);
    } else if !extra_lines.is_empty() || !child_lines.is_empty() {
        let lines: Vec<String> = extra_lines.into_iter().chain(child_lines).collect();
        s.push_str("\n  ");
        s.push_str(&lines.join("\n  "));
        s.push('\n');
    }
    s.push(')');
    s
}

/// Indent every line but the first (`torch.nn.modules.module._addindent`).
fn add_indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    let mut lines = s.split('\n');
    let first = lines.next().unwrap_or("").to_string();
    lines.fold(first, |acc, l| format!("{acc}\n{pad}{l}"))
}
