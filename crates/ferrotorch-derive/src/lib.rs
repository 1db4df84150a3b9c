//! `#[derive(Module)]`: PyTorch's module registration for Rust structs.
//!
//! Every field is registered under its name (tuple fields under their
//! index) through the `ModuleField` trait of `ferrotorch::nn`: a
//! `Parameter` registers a parameter, a `Buffer` a buffer, any type that
//! itself derives `Module` a submodule, `Option`s and `Vec`s of those what
//! they hold (a `Vec` becomes a `ModuleList`-like child), and plain
//! configuration values (numbers, bools, strings) nothing.
//!
//! Attributes:
//! - `#[module(skip)]` on a field: not registered (for any other type).
//! - `#[module(name = "...")]` on a field: the key used in `state_dict`.
//! - `#[module(extra_repr = "method")]` on the struct: a `fn(&self) -> String`
//!   printed between the parentheses of the module's repr, as PyTorch's
//!   `extra_repr`.
//! - `#[module(type_name = "...")]` on the struct: the name printed
//!   (defaults to the struct's name).
//! - `#[module(crate = "path")]` on the struct: where `nn` lives
//!   (default `::ferrotorch::nn`).

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitStr};

/// Derive `Module` (and `ModuleField`, so the struct can be a submodule).
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[derive(Default)]
struct StructAttrs {
    krate: Option<syn::Path>,
    extra_repr: Option<syn::Ident>,
    type_name: Option<String>,
}

fn struct_attrs(input: &DeriveInput) -> syn::Result<StructAttrs> {
    let mut out = StructAttrs::default();
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("module")) {
        attr.parse_nested_meta(|m| {
            let value: LitStr = m.value()?.parse()?;
            if m.path.is_ident("crate") {
                out.krate = Some(value.parse()?);
            } else if m.path.is_ident("extra_repr") {
                out.extra_repr = Some(value.parse()?);
            } else if m.path.is_ident("type_name") {
                out.type_name = Some(value.value());
            } else {
                return Err(m.error("expected `crate`, `extra_repr` or `type_name`"));
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// A field's registration: `None` when skipped, else its key.
fn field_key(field: &syn::Field, default: String) -> syn::Result<Option<String>> {
    let mut key = Some(default);
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("module")) {
        attr.parse_nested_meta(|m| {
            if m.path.is_ident("skip") {
                key = None;
            } else if m.path.is_ident("name") {
                let v: LitStr = m.value()?.parse()?;
                key = Some(v.value());
            } else {
                return Err(m.error("expected `skip` or `name = \"...\"`"));
            }
            Ok(())
        })?;
    }
    Ok(key)
}

fn expand(input: DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let attrs = struct_attrs(&input)?;
    let nn = attrs
        .krate
        .unwrap_or_else(|| syn::parse_quote!(::ferrotorch::nn));
    let name = &input.ident;
    let type_name = attrs.type_name.unwrap_or_else(|| name.to_string());
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            name,
            "#[derive(Module)] works on structs",
        ));
    };
    let mut visits = Vec::new();
    let fields: Vec<(proc_macro2::TokenStream, &syn::Field, String)> = match &data.fields {
        Fields::Named(f) => f
            .named
            .iter()
            .map(|f| {
                let id = f.ident.clone().expect("named field");
                (
                    quote!(#id),
                    f,
                    id.to_string().trim_start_matches("r#").to_string(),
                )
            })
            .collect(),
        Fields::Unnamed(f) => f
            .unnamed
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let idx = syn::Index::from(i);
                (quote!(#idx), f, i.to_string())
            })
            .collect(),
        Fields::Unit => Vec::new(),
    };
    for (access, field, default) in fields {
        if let Some(key) = field_key(field, default)? {
            visits.push(quote! {
                #nn::ModuleField::visit_field(&self.#access, #key, visitor);
            });
        }
    }
    let extra = attrs.extra_repr.map(|m| {
        let m = format_ident!("{}", m);
        quote! {
            fn extra_repr(&self) -> ::std::string::String { self.#m() }
        }
    });
    let (impl_g, ty_g, where_g) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_g #nn::Module for #name #ty_g #where_g {
            fn visit<'__a>(&'__a self, visitor: &mut dyn FnMut(&str, #nn::Entry<'__a>)) {
                #(#visits)*
            }
            fn type_name(&self) -> &str { #type_name }
            fn as_module(&self) -> &dyn #nn::Module { self }
            fn as_any(&self) -> &dyn ::std::any::Any { self }
            #extra
        }
        impl #impl_g #nn::ModuleField for #name #ty_g #where_g {
            fn visit_field<'__a>(&'__a self, name: &str, visitor: &mut dyn FnMut(&str, #nn::Entry<'__a>)) {
                visitor(name, #nn::Entry::Module(self));
            }
        }
    })
}
