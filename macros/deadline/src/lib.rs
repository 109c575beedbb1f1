//! `#[deadline::test]`: `#[tokio::test]` with a deadline, so that no in-process test can hang.
//!
//! The engines have timeouts of their own, but a test that waits on something they do not
//! watch (a channel, a task, a server's readiness) would hang the whole suite with no name on
//! it. Under this attribute the test's body runs inside `tokio::time::timeout`; when the
//! deadline passes the test fails, saying which test and after how long.
//!
//! ```ignore
//! #[deadline::test]                                      // 300 s
//! #[deadline::test(secs = 900)]                          // a longer run
//! #[deadline::test(flavor = "multi_thread", worker_threads = 2)]
//! ```
//!
//! Every argument but `secs` goes to `tokio::test` as it is. The default, 300 s, leaves room for
//! a busy two-core machine; a test that first waits its turn for the suite's heavy lock
//! (`support::heavy`, one heavy test at a time) says `secs = 900`, since its deadline counts the
//! wait too.

use proc_macro::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{parse_macro_input, Expr, ExprLit, ItemFn, Lit, Meta, Token};

/// The deadline of a test that names none, in seconds.
const DEFAULT_SECS: u64 = 300;

#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(args with Punctuated::<Meta, Token![,]>::parse_terminated);
    let function = parse_macro_input!(item as ItemFn);
    let mut secs = DEFAULT_SECS;
    let mut passed_on = Vec::new();
    for arg in args {
        match &arg {
            Meta::NameValue(nv) if nv.path.is_ident("secs") => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Int(n), ..
                }) => match n.base10_parse::<u64>() {
                    Ok(n) if n > 0 => secs = n,
                    _ => {
                        return syn::Error::new_spanned(
                            n,
                            "secs: a whole number of seconds, over 0",
                        )
                        .to_compile_error()
                        .into()
                    }
                },
                other => {
                    return syn::Error::new_spanned(other, "secs: a whole number of seconds")
                        .to_compile_error()
                        .into()
                }
            },
            _ => passed_on.push(arg),
        }
    }
    if function.sig.asyncness.is_none() {
        return syn::Error::new_spanned(
            function.sig.fn_token,
            "#[deadline::test] takes an async fn",
        )
        .to_compile_error()
        .into();
    }
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let name = sig.ident.to_string();
    quote! {
        #[::tokio::test(#(#passed_on),*)]
        #(#attrs)*
        #vis #sig {
            let body = async move #block;
            match ::tokio::time::timeout(::std::time::Duration::from_secs(#secs), body).await {
                ::std::result::Result::Ok(done) => done,
                ::std::result::Result::Err(_) => ::std::panic!(
                    "test `{}` passed its deadline of {} s: something it waited for never came",
                    #name, #secs
                ),
            }
        }
    }
    .into()
}
