//! Writing an answer's head and framing its body.

use bytes::{Bytes, BytesMut};

use super::message::{Fault, Framing, Plan};
use crate::text::decimal;

/// The reason phrase HTTP gives `status` (`Service Unavailable`), if it has one.
pub fn canonical_reason(status: u16) -> Option<&'static str> {
    hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
}

fn reason(status: u16) -> &'static str {
    canonical_reason(status).unwrap_or("Unknown")
}

/// The status line and headers of `plan`, in a buffer with room for `room` more bytes (the body,
/// when it goes out in the same write).
pub fn head(plan: &Plan, close: bool, room: usize) -> Vec<u8> {
    let r = &plan.response;
    let mut out = Vec::with_capacity(160 + r.headers.len() * 48 + room);
    let mut digits = [0; 20];
    if r.status == 200 {
        // Nearly every answer: its line without a number written or a reason looked up.
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    } else {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(decimal(u64::from(r.status), &mut digits).as_bytes());
        out.push(b' ');
        out.extend_from_slice(reason(r.status).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in &r.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let length = match plan.framing {
        Framing::Length => Some(r.body.len() as u64),
        Framing::Lie { declared } => Some(declared),
        Framing::Chunked => None,
    };
    match length {
        Some(length) => {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(decimal(length, &mut digits).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        None => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    let closes = close || !matches!(plan.framing, Framing::Length) || plan.fault != Fault::None;
    out.extend_from_slice(if closes {
        b"connection: close\r\n\r\n" as &[u8]
    } else {
        b"connection: keep-alive\r\n\r\n"
    });
    out
}

/// The body bytes as framed (a chunked body is one chunk, without the final zero chunk when
/// the body is endless).
pub(super) fn framed_body(plan: &Plan) -> Bytes {
    let body = &plan.response.body;
    if plan.framing != Framing::Chunked || body.is_empty() {
        return body.clone();
    }
    let mut out = BytesMut::with_capacity(body.len() + 16);
    out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
    if !plan.endless {
        out.extend_from_slice(b"0\r\n\r\n");
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::http1::Response;

    /// The status line (200's written whole, the others from the number and its reason), the
    /// response's own fields, then the framing ones.
    #[test]
    fn a_head_holds_the_status_line_the_fields_and_the_framing() {
        let head_of = |status, close| {
            let plan = Plan::immediate(Response::new(status, "text/plain", "hi"));
            String::from_utf8(head(&plan, close, 0)).unwrap()
        };
        assert_eq!(
            head_of(200, false),
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\
             connection: keep-alive\r\n\r\n"
        );
        assert_eq!(
            reason(200),
            "OK",
            "the line written whole says what the lookup would"
        );
        assert_eq!(
            head_of(404, true),
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\
             connection: close\r\n\r\n"
        );
        assert!(head_of(299, false).starts_with("HTTP/1.1 299 Unknown\r\n"));
    }
}
