//! The dispatcher: alias annotations read from schemas, op handles, the
//! dispatch key stack and its thread-local modes.

use ferrotorch_core::dispatch::{self, find_schema, Schema};

#[test]
fn schemas_carry_alias_annotations() {
    let t = find_schema("transpose.int").unwrap();
    assert!(t.is_view(0) && !t.is_inplace());
    assert_eq!(t.aliased_input(0), Some(0));
    let a = find_schema("add_.Tensor").unwrap();
    assert!(a.is_inplace() && !a.is_view(0));
    assert_eq!(a.mutated_args().collect::<Vec<_>>(), vec![0]);
    let s = find_schema("split.Tensor").unwrap();
    assert!(s.is_view(0));
    assert!(s.args[0].alias.as_ref().unwrap().wildcard_after);
    let plain = find_schema("add.Tensor").unwrap();
    assert!(!plain.is_view(0) && !plain.is_inplace() && plain.aliased_input(0).is_none());
    // an out-variant style schema: the written argument is not `self`
    let o = Schema::parse("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)").unwrap();
    assert_eq!(o.aliased_input(0), Some(1));
    assert!(o.is_inplace());
    for bad in [
        "f(Tensor(!) x) -> Tensor",
        "f(Tensor(a -> b) x) -> Tensor",
        "f(Tensor(a x) -> Tensor",
    ] {
        assert!(Schema::parse(bad).is_err(), "{bad}");
    }
}

/// Every registered in-place op (`name_`) says so in its schema, and
/// every op that says it writes an argument returns it: the facts the
/// tracer and the bindings read agree with the names.
#[test]
fn inplace_names_and_schemas_agree() {
    for full in dispatch::op_names() {
        let s = find_schema(&full).unwrap();
        if s.name.ends_with('_')
            && !s.name.starts_with('_')
            && s.args.first().is_some_and(|a| a.name == "self")
        {
            assert!(
                s.is_inplace(),
                "{full}: named in place but its schema does not write self: {s}"
            );
        }
        if s.mutated_args().next().is_some() && !s.returns.is_empty() {
            assert!(
                s.is_inplace(),
                "{full}: writes an argument but does not return it: {s}"
            );
        }
    }
}
