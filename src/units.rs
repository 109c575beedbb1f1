//! Quantities written by people: durations (`120s`, `2m`, `500ms`, or seconds) and byte counts
//! (`5MB`, `512k`, `5MiB`). Flags, suites, fleet files and behaviours all read them here; and
//! the host a `--host` flag names (an IP address or a host name), and a HOST:PORT to listen on.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Why a quantity does not read: a usage error (the flag, suite or file that wrote it says
/// where; the message says what).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("expected a positive duration")]
    NotPositive,
    #[error("{cause} (expected e.g. 120s, 2m, 500ms)")]
    NotADuration { cause: String },
    #[error("must be more than zero")]
    Zero,
    #[error("{text:?} is not a byte count (expected e.g. 5000000, 512k, 5MB, 5MiB)")]
    NotAByteCount { text: String },
    #[error("unknown unit {unit:?} (expected k, KB, KiB, M, MB, MiB, G, GB, GiB)")]
    UnknownUnit { unit: String },
    #[error("too large")]
    TooLarge,
    #[error("neither an IP address nor a host name that resolves ({cause})")]
    UnknownHost { cause: String },
    #[error("a host name that resolves to no address")]
    NoAddress,
    #[error("expected HOST:PORT (e.g. 127.0.0.1:0, localhost:8000)")]
    NotAnAddress,
    #[error("expected PORT or HOST:PORT (e.g. 47700, 127.0.0.1:47700, localhost:8000)")]
    NotATcpEndpoint,
}

impl crate::error::LayerError for UnitError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// For the loaders and rules that gather one-line messages with `?` (the message unchanged).
impl From<UnitError> for String {
    fn from(e: UnitError) -> Self {
        e.to_string()
    }
}

/// A host to bind: an IP address, or a host name resolved to one (its first IPv4 address when
/// it has one: `localhost` is 127.0.0.1 to most clients). clap names the flag in the error.
pub fn parse_host(text: &str) -> Result<IpAddr, UnitError> {
    use std::net::ToSocketAddrs;
    if let Ok(ip) = text.parse() {
        return Ok(ip);
    }
    let found: Vec<IpAddr> = (text, 0)
        .to_socket_addrs()
        .map_err(|e| UnitError::UnknownHost {
            cause: e.to_string(),
        })?
        .map(|a| a.ip())
        .collect();
    found
        .iter()
        .find(|ip| ip.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or(UnitError::NoAddress)
}

/// An address to listen on, HOST:PORT, the host as [`parse_host`] reads it (`localhost:0`).
pub fn parse_listen_addr(text: &str) -> Result<SocketAddr, UnitError> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let (host, port) = text
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
        .ok_or(UnitError::NotAnAddress)?;
    Ok(SocketAddr::new(parse_host(host)?, port))
}

/// A TCP endpoint as a `--tcp` flag names it (the probe's and the mock's alike): HOST:PORT, or
/// a PORT alone, the host then the command's own (loopback for the probe, `--host` for the
/// mock). The host is kept as written: a name is resolved where it is connected to or bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpEndpoint {
    /// The host written (an IPv6 address without its brackets), if any.
    pub host: Option<String>,
    pub port: u16,
}

impl TcpEndpoint {
    /// `HOST:PORT` to connect to, the host `default` when none was written.
    pub fn host_port(&self, default: &str) -> String {
        let host = self.host.as_deref().unwrap_or(default);
        if host.contains(':') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The address to bind: the host written (as [`parse_host`] reads it), else `default`.
    pub fn bind_addr(&self, default: IpAddr) -> Result<SocketAddr, UnitError> {
        let ip = match &self.host {
            Some(host) => parse_host(host)?,
            None => default,
        };
        Ok(SocketAddr::new(ip, self.port))
    }
}

/// `--tcp`'s value: `47700`, `127.0.0.1:47700`, `localhost:8000`, `[::1]:47700`.
pub fn parse_tcp(text: &str) -> Result<TcpEndpoint, UnitError> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(TcpEndpoint { host: None, port });
    }
    let (host, port) = text
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
        .filter(|(h, _)| !h.is_empty())
        .ok_or(UnitError::NotATcpEndpoint)?;
    Ok(TcpEndpoint {
        host: Some(host.to_string()),
        port,
    })
}

/// A duration: `120s`, `2m`, `500ms`, `1h 30m`, or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let text = text.trim();
    let d = match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Duration::from_secs_f64(secs),
        Ok(_) => return Err(UnitError::NotPositive),
        Err(_) => humantime::parse_duration(text).map_err(|e| UnitError::NotADuration {
            cause: e.to_string(),
        })?,
    };
    if d.is_zero() {
        return Err(UnitError::Zero);
    }
    Ok(d)
}

/// A duration for people, to the millisecond: `2s`, `4s 400ms`.
pub fn format_duration(d: Duration) -> String {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

/// The `q` quantile (0 to 1) of durations sorted ascending; zero when there are none.
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize]
}

/// A byte count: `5000000`, `512k`, `5M`, `5MB`, `5MiB` (k and M are 1000 and 1,000,000; KiB and
/// MiB are 1024 and 1,048,576).
pub fn parse_bytes(text: &str) -> Result<usize, UnitError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: usize = digits.parse().map_err(|_| UnitError::NotAByteCount {
        text: text.to_string(),
    })?;
    let scale: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        other => {
            return Err(UnitError::UnknownUnit {
                unit: other.to_string(),
            })
        }
    };
    match n.checked_mul(scale) {
        Some(0) => Err(UnitError::Zero),
        Some(bytes) => Ok(bytes),
        None => Err(UnitError::TooLarge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_takes_a_port_or_a_host_and_port() {
        let port = parse_tcp("47700").unwrap();
        assert_eq!(port.host_port("127.0.0.1"), "127.0.0.1:47700");
        let lo = IpAddr::from([127, 0, 0, 1]);
        assert_eq!(port.bind_addr(lo).unwrap(), SocketAddr::new(lo, 47700));
        let named = parse_tcp("localhost:8000").unwrap();
        assert_eq!(named.host_port("127.0.0.1"), "localhost:8000");
        assert_eq!(
            named.bind_addr(IpAddr::from([0, 0, 0, 0])).unwrap().port(),
            8000
        );
        assert_eq!(
            parse_tcp("[::1]:9").unwrap().host_port("x"),
            "[::1]:9",
            "an IPv6 host keeps its brackets"
        );
        for bad in ["nohost", ":47700", "host:port", "70000", "h:70000", ""] {
            assert_eq!(parse_tcp(bad), Err(UnitError::NotATcpEndpoint), "{bad:?}");
        }
    }

    #[test]
    fn hosts_and_listen_addresses() {
        let v4 = IpAddr::from([127, 0, 0, 1]);
        assert_eq!(parse_host("127.0.0.1"), Ok(v4));
        assert_eq!(parse_host("::1"), Ok("::1".parse().unwrap()));
        assert_eq!(parse_host("localhost"), Ok(v4));
        assert_eq!(parse_listen_addr("localhost:0"), Ok(SocketAddr::new(v4, 0)));
        assert_eq!(
            parse_listen_addr("[::1]:8000"),
            Ok("[::1]:8000".parse().unwrap())
        );
        assert_eq!(parse_listen_addr("localhost"), Err(UnitError::NotAnAddress));
        assert_eq!(
            parse_listen_addr("localhost:http"),
            Err(UnitError::NotAnAddress)
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("120s"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0")
            .unwrap_err()
            .to_string()
            .contains("more than zero"));
        assert!(parse_duration("soon")
            .unwrap_err()
            .to_string()
            .contains("expected e.g."));
        assert_eq!(parse_duration("-3"), Err(UnitError::NotPositive));
        assert_eq!(
            parse_duration("0").unwrap_err().to_string(),
            "must be more than zero"
        );
        assert_eq!(
            parse_bytes("5 parsecs").unwrap_err().to_string(),
            "unknown unit \"parsecs\" (expected k, KB, KiB, M, MB, MiB, G, GB, GiB)"
        );
    }

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("5000000"), Ok(5_000_000));
        assert_eq!(parse_bytes("5MB"), Ok(5_000_000));
        assert_eq!(parse_bytes("5MiB"), Ok(5 << 20));
        assert_eq!(parse_bytes("512k"), Ok(512_000));
        assert!(parse_bytes("5 parsecs")
            .unwrap_err()
            .to_string()
            .contains("unknown unit"));
        assert!(parse_bytes("lots")
            .unwrap_err()
            .to_string()
            .contains("not a byte count"));
        assert!(parse_bytes("0").is_err());
    }
}
