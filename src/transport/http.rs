//! A hardened HTTP/1.1 client for talking to untrusted agents.
//!
//! One connection per exchange (no pool: every case stands alone and is reproducible with one
//! `curl`). The whole exchange (connect, TLS, send, head, body) runs under one total deadline, so a
//! peer that trickles a byte a second is cut off at the deadline rather than kept alive by each
//! byte. The body is read up to `max_body` bytes plus one frame, then reading stops; the response
//! head is capped by hyper's buffer limit (`max_head`) and at `MAX_HEADERS` header fields.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::Uri;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// Why a base URL does not parse: the URL as written and what is wrong with it. A usage error
/// by type (a flag or a file gave it); a caller that built the URL itself says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("{url:?} is not a URL ({cause})")]
    NotAUrl { url: String, cause: String },
    #[error("{url:?}: scheme {scheme:?} is not supported (use http:// or https://)")]
    Scheme { url: String, scheme: String },
    #[error("{url:?} has no scheme (write http://{url})")]
    NoScheme { url: String },
    #[error("{url:?} has no host")]
    NoHost { url: String },
    #[error("{url:?}: credentials in the URL are not supported (use --api-key)")]
    Credentials { url: String },
    #[error("{url:?}: a base URL takes no query string")]
    Query { url: String },
}

impl crate::error::LayerError for UrlError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// For the loaders that gather one-line messages with `?` (the message unchanged).
impl From<UrlError> for String {
    fn from(e: UrlError) -> Self {
        e.to_string()
    }
}

/// A parsed base URL: scheme, host, port and a path prefix (without a trailing slash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    pub prefix: String,
}

impl BaseUrl {
    /// Parses `http://host[:port][/prefix]` or `https://…`. The error says what is wrong.
    pub fn parse(text: &str) -> Result<BaseUrl, UrlError> {
        let url = || text.to_string();
        let uri: Uri =
            text.parse()
                .map_err(|e: hyper::http::uri::InvalidUri| UrlError::NotAUrl {
                    url: url(),
                    cause: e.to_string(),
                })?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            Some(other) => {
                return Err(UrlError::Scheme {
                    url: url(),
                    scheme: other.to_string(),
                })
            }
            None => return Err(UrlError::NoScheme { url: url() }),
        };
        let host = uri.host().ok_or_else(|| UrlError::NoHost { url: url() })?;
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(UrlError::Credentials { url: url() });
        }
        if uri.query().is_some() {
            return Err(UrlError::Query { url: url() });
        }
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let prefix = uri.path().trim_end_matches('/').to_string();
        Ok(BaseUrl {
            tls,
            host,
            port,
            prefix,
        })
    }

    /// The full URL of `path` (which starts with `/`) under this base.
    pub fn join(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let default_port = if self.tls { 443 } else { 80 };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == default_port {
            format!("{scheme}://{host}{}{path}", self.prefix)
        } else {
            format!("{scheme}://{host}:{}{}{path}", self.port, self.prefix)
        }
    }

    fn host_header(&self) -> String {
        let default_port = if self.tls { 443 } else { 80 };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == default_port {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

impl std::fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.join(""))
    }
}

/// One request to send.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path under the base URL, starting with `/`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

/// Bounds for one exchange.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Total time for the whole exchange.
    pub deadline: Duration,
    /// Body bytes we accept; we read at most one frame past this to know it was exceeded.
    pub max_body: usize,
    /// Largest response head (status line and headers) we accept.
    pub max_head: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_secs(120),
            max_body: 5_000_000,
            max_head: 64 * 1024,
        }
    }
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Header values, lossily decoded.
    pub headers: Vec<(String, String)>,
    /// The body, at most `max_body` bytes plus one frame.
    pub body: Bytes,
    /// The body went past `max_body`; we stopped reading.
    pub body_exceeded: bool,
    pub elapsed: Duration,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why an exchange produced no usable response. Each variant's text says what the peer did.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum Error {
    #[error("agent unreachable: cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("TLS handshake with {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    #[error("no complete answer within {} (the deadline, --timeout): {phase}", humantime::format_duration(*deadline))]
    Timeout { deadline: Duration, phase: String },
    #[error("connection reset by the agent {phase}")]
    Reset { phase: String },
    /// hyper reports both caps as one error, so the message names both.
    #[error("the response head (status line and headers) is too large: more than {limit} bytes or more than {MAX_HEADERS} header fields")]
    HeadTooLarge { limit: usize },
    #[error("not a valid HTTP response: {reason}")]
    NotHttp { reason: String },
    #[error("connection closed {phase}")]
    Closed { phase: String },
    #[error("{0}")]
    Other(String),
}

/// Most header fields we accept in a response head (hyper's default, made explicit: the
/// `HeadTooLarge` message names it).
pub const MAX_HEADERS: usize = 100;

/// Where an exchange stands; read when the deadline fires, to say how far the peer got.
#[derive(Default)]
pub(crate) struct Progress {
    phase: AtomicU8,
    body_bytes: AtomicU64,
}

const CONNECTING: u8 = 0;
const WAITING_HEAD: u8 = 1;
const READING_BODY: u8 = 2;

impl Progress {
    fn set(&self, phase: u8) {
        self.phase.store(phase, Ordering::Relaxed);
    }

    pub(crate) fn describe(&self) -> String {
        match self.phase.load(Ordering::Relaxed) {
            CONNECTING => "still connecting".into(),
            WAITING_HEAD => "no response head received".into(),
            _ => format!(
                "body still arriving after {} bytes",
                self.body_bytes.load(Ordering::Relaxed)
            ),
        }
    }
}

/// Sends one request and reads the response, within `limits`.
pub async fn send(base: &BaseUrl, request: &Request, limits: Limits) -> Result<Response, Error> {
    let progress = Progress::default();
    let started = Instant::now();
    match tokio::time::timeout(
        limits.deadline,
        exchange(base, request, limits, &progress, started),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(Error::Timeout {
            deadline: limits.deadline,
            phase: progress.describe(),
        }),
    }
}

/// A TCP connection to `base`'s host and port, Nagle off (a request goes out in one piece);
/// a failure names the address.
pub(crate) async fn open_tcp(base: &BaseUrl) -> Result<TcpStream, Error> {
    let tcp = TcpStream::connect((base.host.as_str(), base.port))
        .await
        .map_err(|e| Error::Connect {
            addr: format!("{}:{}", base.host, base.port),
            reason: e.to_string(),
        })?;
    let _ = tcp.set_nodelay(true);
    Ok(tcp)
}

/// Opens a connection (and completes a TLS handshake for https), then closes it.
pub async fn connect(base: &BaseUrl, deadline: Duration) -> Result<Duration, Error> {
    let started = Instant::now();
    let attempt = async {
        let addr = format!("{}:{}", base.host, base.port);
        let tcp = open_tcp(base).await?;
        if base.tls {
            tls_connect(base, tcp)
                .await
                .map_err(|reason| Error::Tls { addr, reason })?;
        }
        Ok(started.elapsed())
    };
    match tokio::time::timeout(deadline, attempt).await {
        Ok(result) => result,
        Err(_) => Err(Error::Timeout {
            deadline,
            phase: "still connecting".into(),
        }),
    }
}

async fn exchange(
    base: &BaseUrl,
    request: &Request,
    limits: Limits,
    progress: &Progress,
    started: Instant,
) -> Result<Response, Error> {
    let addr = format!("{}:{}", base.host, base.port);
    let tcp = open_tcp(base).await?;
    if base.tls {
        let tls = tls_connect(base, tcp)
            .await
            .map_err(|reason| Error::Tls { addr, reason })?;
        exchange_on(tls, base, request, limits, progress, started).await
    } else {
        exchange_on(tcp, base, request, limits, progress, started).await
    }
}

/// One exchange over a stream that is already open (the fuzz targets' in-memory one), without
/// the deadline: the caller bounds it.
pub(crate) async fn exchange_over<S>(
    stream: S,
    base: &BaseUrl,
    request: &Request,
    limits: Limits,
) -> Result<Response, Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let progress = Progress::default();
    exchange_on(stream, base, request, limits, &progress, Instant::now()).await
}

async fn exchange_on<S>(
    stream: S,
    base: &BaseUrl,
    request: &Request,
    limits: Limits,
    progress: &Progress,
    started: Instant,
) -> Result<Response, Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = handshake(stream, limits).await?;
    // The connection task ends with the exchange: the guard aborts it when we return.
    let _conn = AbortOnDrop(tokio::spawn(conn));
    exchange_with(&mut sender, base, request, limits, progress, started).await
}

/// A connection's sender and the task that drives it (to be spawned).
pub(crate) type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// The HTTP/1.1 handshake over `stream`, with the head caps of `limits`.
pub(crate) async fn handshake<S>(
    stream: S,
    limits: Limits,
) -> Result<
    (
        Sender,
        impl std::future::Future<Output = Result<(), hyper::Error>> + Send + 'static,
    ),
    Error,
>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    hyper::client::conn::http1::Builder::new()
        .max_buf_size(limits.max_head.max(8192))
        .max_headers(MAX_HEADERS)
        .handshake::<_, Full<Bytes>>(TokioIo::new(stream))
        .await
        .map_err(|e| classify(e, "before the request was sent", limits))
}

/// One exchange on a connection that is open: the request sent, the head and the body read
/// (at most `max_body` bytes and one frame).
pub(crate) async fn exchange_with(
    sender: &mut Sender,
    base: &BaseUrl,
    request: &Request,
    limits: Limits,
    progress: &Progress,
    started: Instant,
) -> Result<Response, Error> {
    progress.set(WAITING_HEAD);

    let mut builder = hyper::Request::builder()
        .method(request.method.as_str())
        .uri(format!("{}{}", base.prefix, request.path))
        .header("host", base.host_header());
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let http_request = builder
        .body(Full::new(request.body.clone()))
        .map_err(|e| Error::Other(format!("cannot build the request: {e}")))?;
    let response = sender
        .send_request(http_request)
        .await
        .map_err(|e| classify(e, "before the response head arrived", limits))?;

    progress.set(READING_BODY);
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut body = response.into_body();
    let mut buf = BytesMut::new();
    let mut body_exceeded = false;
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|e| classify(e, &format!("mid-body, after {} bytes", buf.len()), limits))?;
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
            progress
                .body_bytes
                .store(buf.len() as u64, Ordering::Relaxed);
            if buf.len() > limits.max_body {
                body_exceeded = true;
                break;
            }
        }
    }
    Ok(Response {
        status,
        headers,
        body: buf.freeze(),
        body_exceeded,
        elapsed: started.elapsed(),
    })
}

/// Turns hyper's error into what the peer did.
fn classify(error: hyper::Error, phase: &str, limits: Limits) -> Error {
    if error.is_parse_too_large() {
        return Error::HeadTooLarge {
            limit: limits.max_head.max(8192),
        };
    }
    if error.is_parse() || error.is_parse_status() {
        return Error::NotHttp {
            reason: error.to_string(),
        };
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&error);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe => Error::Reset {
                    phase: phase.to_string(),
                },
                _ => Error::Other(format!("I/O error {phase}: {io}")),
            };
        }
        source = s.source();
    }
    if error.is_incomplete_message() || error.is_closed() || error.is_canceled() {
        return Error::Closed {
            phase: phase.to_string(),
        };
    }
    Error::Other(format!("{error} ({phase})"))
}

pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("ring supports the default TLS versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(config)
        })
        .clone()
}

async fn tls_connect(
    base: &BaseUrl,
    tcp: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let name =
        rustls::pki_types::ServerName::try_from(base.host.clone()).map_err(|e| e.to_string())?;
    tokio_rustls::TlsConnector::from(tls_config())
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        let b = BaseUrl::parse("http://127.0.0.1:3001").unwrap();
        assert_eq!(b.join("/analyze"), "http://127.0.0.1:3001/analyze");
        let b = BaseUrl::parse("https://agents.example/team/a/").unwrap();
        assert_eq!((b.port, b.prefix.as_str()), (443, "/team/a"));
        assert_eq!(b.join("/vote"), "https://agents.example/team/a/vote");
        assert!(BaseUrl::parse("127.0.0.1:3001")
            .unwrap_err()
            .to_string()
            .contains("scheme"));
        assert!(BaseUrl::parse("ftp://x")
            .unwrap_err()
            .to_string()
            .contains("not supported"));
        assert!(BaseUrl::parse("http://u:p@x")
            .unwrap_err()
            .to_string()
            .contains("credentials"));
        let b = BaseUrl::parse("http://[::1]:8080").unwrap();
        assert_eq!(b.join("/x"), "http://[::1]:8080/x");
    }
}
