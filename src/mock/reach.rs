//! Whether the platform can reach the fleet where it is told to: `advertise:` changes only the
//! URL given at registration, so a fleet that listens on loopback but advertises a LAN address
//! (or a name that resolves elsewhere) is registered at an address where nothing answers.

use std::net::IpAddr;
use std::time::Duration;

use crate::transport::http::BaseUrl;

/// How long the advertised name may take to resolve before the check gives up on it.
const RESOLVE_DEADLINE: Duration = Duration::from_secs(3);

/// A warning (one line, for stderr) when `advertise` names a host the fleet, listening on
/// `listen`, does not answer on; `None` when it does (or when the fleet listens on every
/// interface, where any address of this host reaches it).
pub async fn advertise_warning(listen: IpAddr, advertise: &str) -> Option<String> {
    if listen.is_unspecified() {
        return None;
    }
    let url = BaseUrl::parse(advertise).ok()?;
    let host = url.host.trim_start_matches('[').trim_end_matches(']');
    let resolved = resolve(host, url.port).await;
    let seen = match &resolved {
        Ok(addrs) if reaches(listen, addrs) => return None,
        Ok(_) if host.parse::<IpAddr>().is_ok() => String::new(),
        Ok(addrs) => format!(
            " ({host} is {})",
            addrs
                .iter()
                .map(IpAddr::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(why) => format!(" ({host} {why})"),
    };
    let advertised_ip = resolved
        .ok()
        .and_then(|addrs| addrs.first().copied())
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| "ADDRESS".into());
    Some(format!(
        "warning: the fleet is advertised to the platform as {advertise}{seen}, but it listens on {listen} only: the platform will find nothing there. Listen on the advertised address too: --host 0.0.0.0 (every interface) or --host {advertised_ip} (the fleet file's host:)"
    ))
}

/// Whether a fleet listening on `listen` answers at any of `addrs`.
fn reaches(listen: IpAddr, addrs: &[IpAddr]) -> bool {
    addrs
        .iter()
        .any(|a| *a == listen || (a.is_loopback() && listen.is_loopback()))
}

/// The addresses `host` stands for: itself when it is an IP address, loopback for `localhost`,
/// else what the resolver says (bounded by [`RESOLVE_DEADLINE`]).
async fn resolve(host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    let lower = host.trim_end_matches('.').to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return Ok(vec![IpAddr::from([127, 0, 0, 1])]);
    }
    match tokio::time::timeout(RESOLVE_DEADLINE, tokio::net::lookup_host((host, port))).await {
        Ok(Ok(addrs)) => {
            let mut ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
            ips.dedup();
            Ok(ips)
        }
        Ok(Err(e)) => Err(format!("does not resolve here: {e}")),
        Err(_) => Err(format!(
            "did not resolve within {}",
            humantime::format_duration(RESOLVE_DEADLINE)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[deadline::test]
    async fn a_host_the_fleet_does_not_listen_on_is_named_with_the_fix() {
        let w = advertise_warning(ip("127.0.0.1"), "http://192.168.1.5:9000")
            .await
            .expect("a warning");
        assert_eq!(
            w,
            "warning: the fleet is advertised to the platform as http://192.168.1.5:9000, but it listens on 127.0.0.1 only: the platform will find nothing there. Listen on the advertised address too: --host 0.0.0.0 (every interface) or --host 192.168.1.5 (the fleet file's host:)"
        );
        // Another address of the same kind is still another address.
        assert!(advertise_warning(ip("10.0.0.2"), "http://10.0.0.3:9000")
            .await
            .is_some());
        // Listening on loopback, advertised as a public name that is loopback nowhere.
        assert!(
            advertise_warning(ip("127.0.0.1"), "http://[2001:db8::1]:9000")
                .await
                .is_some_and(|w| w
                    .contains("as http://[2001:db8::1]:9000, but it listens on 127.0.0.1 only"))
        );
    }

    #[deadline::test]
    async fn a_host_the_fleet_listens_on_is_not_warned_of() {
        for (listen, advertise) in [
            ("127.0.0.1", "http://127.0.0.1:9000"),
            ("127.0.0.1", "http://localhost:9000"),
            ("127.0.0.1", "http://127.0.0.2"),
            ("::1", "http://localhost:9000"),
            ("192.168.1.5", "http://192.168.1.5:9000/prefix"),
            ("0.0.0.0", "http://192.168.1.5:9000"),
            ("0.0.0.0", "http://agents.example.com"),
            ("::", "http://10.1.2.3"),
        ] {
            assert_eq!(
                advertise_warning(ip(listen), advertise).await,
                None,
                "{listen} {advertise}"
            );
        }
    }
}
