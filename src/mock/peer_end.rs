//! Who ended a wait the peer's side ended: the peer giving up, or something outside it.
//!
//! A harness that stops waiting for an agent gives up: it closes the connection (or the agent's
//! stdin) and lives on, or it signals the agent from its own pid. Its process ending is not
//! that: a `timeout` wrapper, a supervisor or a user's Ctrl-C that kills the harness closes
//! the same connection, and crediting that close to the harness would pass a harness that never
//! gave up (or blame it for a wait it never chose to end). So when the input ends while an
//! answer is held back, the mock looks at the harness's process (found while it was waiting:
//! the writer of the agent's stdin pipe, the peer of a Unix socket, the owner of a local TCP
//! connection's other end) and at the signals that reached the agent, with their senders
//! (`SA_SIGINFO`'s `si_pid`, which `stdio.kills-process-group` reads too, see
//! [`super::linger`]):
//!
//! - the process still running (not exiting): it closed on purpose — [`PeerEnd::GaveUp`];
//! - a signal from the harness's own pid: [`PeerEnd::GaveUp`];
//! - a signal from anyone else, or the process exiting or gone when its end closed:
//!   [`PeerEnd::Ended`], saying by what (the sender's program, from /proc);
//! - the process not found (a peer on another host, another user's process, no /proc):
//!   [`PeerEnd::Unknown`], saying why.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// How an awaited answer's wait was ended by the peer's side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum PeerEnd {
    /// The harness gave up: it closed while it lived on, or signalled the agent itself.
    GaveUp,
    /// The harness did not end the wait itself: `what` says what did and when ("the harness
    /// was ended from outside at +7.2 s (SIGTERM from pid 12 (timeout))").
    Ended { what: String },
    /// Who ended it cannot be told: `why`.
    Unknown { why: String },
}

/// How long after the input ends the mock looks for the signal or the exit that ended the
/// harness (a signal to the whole group reaches the agent about when the harness's death
/// closes its input).
const SETTLE: Duration = Duration::from_millis(200);

/// How long a server being stopped still serves a connection: one whose input ended just
/// before is judged (its look at the harness takes [`SETTLE`] at most).
pub const LAST_LOOK: Duration = Duration::from_millis(300);

/// `PF_EXITING` in /proc/PID/stat's flags: the process is on its way out (set before its files
/// are closed, so a close that comes from its death always finds it set, or the process gone).
const PF_EXITING: u64 = 0x4;

/// One process as found: its pid, its start time (a pid reused later is not it), its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    start: u64,
    name: String,
}

/// What /proc/PID/stat says of a process.
struct Stat {
    state: char,
    flags: u64,
    start: u64,
    /// The wait status of a zombie (field 52, Linux 3.5+).
    exit_code: Option<i32>,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) is in parentheses and may hold spaces: the fields after it follow the
    // last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state), so field N is fields[N - 3].
    Some(Stat {
        state: fields.first()?.chars().next()?,
        flags: fields.get(6)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        exit_code: fields.get(49).and_then(|c| c.parse().ok()),
    })
}

/// How a process is doing.
enum Life {
    Running,
    /// Exiting, or a zombie (with its wait status when read).
    Ending(Option<i32>),
    Gone,
}

impl Process {
    /// The process `pid`, if it is there.
    pub fn of(pid: i32) -> Option<Process> {
        let s = stat(pid)?;
        Some(Process {
            pid,
            start: s.start,
            name: comm(pid).unwrap_or_default(),
        })
    }

    fn life(&self) -> Life {
        match stat(self.pid) {
            Some(s) if s.start != self.start => Life::Gone,
            Some(s) if matches!(s.state, 'Z' | 'X') => Life::Ending(s.exit_code),
            Some(s) if s.flags & PF_EXITING != 0 => Life::Ending(None),
            Some(_) => Life::Running,
            None => Life::Gone,
        }
    }

    /// `pid 12 (python3)`.
    pub fn named(&self) -> String {
        if self.name.is_empty() {
            format!("pid {}", self.pid)
        } else {
            format!("pid {} ({})", self.pid, self.name)
        }
    }
}

fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|c| c.trim().to_string())
}

/// A process as a reader knows it: `pid 1234 (python3)`.
pub fn process_name(pid: i32) -> String {
    match comm(pid) {
        Some(name) => format!("pid {pid} ({name})"),
        None if pid == 0 => "the kernel (no sending process)".to_string(),
        None => format!("pid {pid}"),
    }
}

/// Where the peer is to be found.
#[derive(Debug, Clone)]
pub enum Source {
    /// Whoever writes the agent's stdin; else `parent`, the agent's parent when it started
    /// (read then: once the parent is gone the agent is someone else's child).
    Stdin { parent: i32 },
    /// The other end of a TCP connection (`local` is ours).
    Tcp { local: SocketAddr, peer: SocketAddr },
    /// The process a Unix socket's credentials name (None: they name none).
    Pid(Option<i32>),
    /// No process to look for: why.
    Nowhere(String),
}

/// The peer of one input (stdin or a connection): where to find it, and its processes once
/// looked up (while it is there: as soon as an answer is held back).
#[derive(Debug)]
pub struct Peer {
    source: Source,
    found: OnceLock<Result<Vec<Process>, String>>,
}

impl Peer {
    /// The peer that writes this process's stdin.
    pub fn stdin() -> Peer {
        Peer::new(Source::Stdin {
            parent: std::os::unix::process::parent_id() as i32,
        })
    }

    pub fn new(source: Source) -> Peer {
        Peer {
            source,
            found: OnceLock::new(),
        }
    }

    /// The peer's processes (looked up on the first call), or why none was found.
    pub fn processes(&self) -> &Result<Vec<Process>, String> {
        self.found.get_or_init(|| find(&self.source))
    }

    /// Whether `pid` is one of the peer's processes.
    fn is(&self, pid: i32) -> bool {
        self.processes()
            .as_ref()
            .is_ok_and(|p| p.iter().any(|p| p.pid == pid))
    }

    /// What the peer's end closes.
    fn input(&self) -> &'static str {
        match self.source {
            Source::Stdin { .. } => "the agent's stdin",
            _ => "the connection",
        }
    }

    fn named(&self) -> String {
        match self.processes() {
            Ok(p) => p.iter().map(Process::named).collect::<Vec<_>>().join(", "),
            Err(_) => "unknown".to_string(),
        }
    }

    /// Who ended the wait, the input having ended (`started`: the mock's start, for "+7.2 s").
    /// Looks for [`SETTLE`] when the peer's process is no longer running (for a signal that
    /// names who ended it, and for its exit status).
    pub async fn closed(&self, started: Instant) -> PeerEnd {
        let procs = match self.processes() {
            Ok(p) => p,
            Err(why) => {
                return PeerEnd::Unknown {
                    why: format!("the harness's process could not be found ({why})"),
                }
            }
        };
        let at = started.elapsed();
        if procs.iter().any(|p| matches!(p.life(), Life::Running)) {
            return PeerEnd::GaveUp;
        }
        // Its end closed the input: what ended it — a signal that reached the agent too (a
        // `timeout` or Ctrl-C signals the whole group), else how the process ended.
        let until = Instant::now() + SETTLE;
        let mut status = None;
        loop {
            if let Some((signal, sender)) = caught() {
                return self.signalled(signal, sender, at);
            }
            let lives: Vec<Life> = procs.iter().map(Process::life).collect();
            if let Some(s) = lives.iter().find_map(|l| match l {
                Life::Ending(s) => *s,
                _ => None,
            }) {
                status = Some(s);
            }
            // The whole moment, even once the process is gone: a `timeout` signals the
            // harness first and the group (the agent) next, and the harness's end may close
            // the input in between.
            if Instant::now() >= until {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let at = at.as_secs_f64();
        let what = match status.map(wait_status) {
            Some(how) => format!(
                "the harness's process ({}) was {how} at +{at:.1} s, which closed {} (its sender, if any, did not signal the agent too, so it is not named)",
                self.named(),
                self.input()
            ),
            None => format!(
                "the harness's process ({}) ended at +{at:.1} s, which closed {} (killed from outside or exited: no signal reached the agent to name a sender)",
                self.named(),
                self.input()
            ),
        };
        PeerEnd::Ended { what }
    }

    /// A signal `signal` from `sender` ended the agent `at` into the run.
    pub fn signalled(&self, signal: &str, sender: i32, at: Duration) -> PeerEnd {
        if self.is(sender) {
            return PeerEnd::GaveUp;
        }
        let from = process_name(sender);
        match self.processes() {
            Ok(_) => PeerEnd::Ended {
                what: format!(
                    "the harness was ended from outside at +{:.1} s ({signal} from {from}, not from the harness, {})",
                    at.as_secs_f64(),
                    self.named()
                ),
            },
            Err(why) => PeerEnd::Unknown {
                why: format!(
                    "{signal} from {from} at +{:.1} s, but which process is the harness is unknown ({why})",
                    at.as_secs_f64()
                ),
            },
        }
    }
}

/// A wait status in words.
fn wait_status(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("killed by {}", signal_name(libc::WTERMSIG(status)))
    } else {
        format!(
            "ended by its own exit, status {}",
            libc::WEXITSTATUS(status)
        )
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        n => format!("signal {n}"),
    }
}

/// Finds the processes of `source`.
fn find(source: &Source) -> Result<Vec<Process>, String> {
    let pids = match source {
        Source::Stdin { parent } => stdin_writers(*parent),
        Source::Tcp { local, peer } => tcp_owners(*local, *peer),
        Source::Pid(Some(pid)) => Ok(vec![*pid]),
        Source::Pid(None) => Err("the socket's credentials name no process".into()),
        Source::Nowhere(why) => Err(why.clone()),
    }?;
    let procs: Vec<Process> = pids.into_iter().filter_map(Process::of).collect();
    if procs.is_empty() {
        return Err("no such process in /proc".into());
    }
    Ok(procs)
}

/// The processes that write the agent's stdin: the peer of a socket, the holders of a pipe's
/// write end; else the agent's `parent`.
fn stdin_writers(parent: i32) -> Result<Vec<i32>, String> {
    // SAFETY: fstat on fd 0 into a zeroed stat buffer it fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let mode = if unsafe { libc::fstat(0, &mut st) } == 0 {
        st.st_mode & libc::S_IFMT
    } else {
        0
    };
    let found = match mode {
        libc::S_IFSOCK => socket_peer_pid(0).map(|p| vec![p]),
        libc::S_IFIFO => Some(pipe_writers(&format!("pipe:[{}]", st.st_ino))),
        _ => None,
    };
    match found {
        Some(pids) if !pids.is_empty() => Ok(pids),
        _ => {
            if parent > 1 {
                Ok(vec![parent])
            } else {
                Err("stdin has no writer to be found, and the agent has no parent".into())
            }
        }
    }
}

/// The pid a connected Unix socket's peer credentials name.
#[cfg(target_os = "linux")]
fn socket_peer_pid(fd: i32) -> Option<i32> {
    // SAFETY: getsockopt fills a ucred of the length passed.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    let ok = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    } == 0;
    (ok && cred.pid > 0).then_some(cred.pid)
}

#[cfg(not(target_os = "linux"))]
fn socket_peer_pid(_fd: i32) -> Option<i32> {
    None
}

/// The pids (other than this one) that hold pipe `link` (`pipe:[123]`) open for writing.
fn pipe_writers(link: &str) -> Vec<i32> {
    let own = std::process::id() as i32;
    let mut pids = Vec::new();
    for (pid, fd, target) in open_files() {
        if pid != own && target == link && opened_for_writing(pid, &fd) && !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    pids
}

/// The pids holding socket `inode`, from one scan of every process's files shared by every
/// connection looked up meanwhile: a harness with thousands of connections, each kept waiting,
/// costs a scan per [`RESCAN`], not one per connection.
fn socket_holders(inode: u64) -> Vec<i32> {
    static SCANNED: std::sync::Mutex<Option<(Instant, SocketMap)>> = std::sync::Mutex::new(None);
    let Ok(mut scanned) = SCANNED.lock() else {
        return Vec::new();
    };
    let fresh = scanned
        .as_ref()
        .is_some_and(|(at, _)| at.elapsed() < RESCAN);
    let known = scanned.as_ref().and_then(|(_, map)| map.get(&inode));
    if known.is_none() && !fresh {
        *scanned = Some((Instant::now(), socket_map()));
    }
    scanned
        .as_ref()
        .and_then(|(_, map)| map.get(&inode).cloned())
        .unwrap_or_default()
}

/// How often the sockets of every process are scanned at most.
const RESCAN: Duration = Duration::from_millis(100);

/// Socket inode → the pids that hold it.
type SocketMap = HashMap<u64, Vec<i32>>;

/// Every socket's holders, of the processes the mock may look at.
fn socket_map() -> SocketMap {
    let mut map = SocketMap::new();
    for (pid, _, link) in open_files() {
        let inode = link
            .strip_prefix("socket:[")
            .and_then(|l| l.strip_suffix(']'))
            .and_then(|i| i.parse().ok());
        if let Some(inode) = inode {
            let pids = map.entry(inode).or_default();
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
    }
    map
}

/// Every (pid, fd, what the fd is open on) the mock may read.
fn open_files() -> Vec<(i32, String, String)> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                let fd_name = fd.file_name().to_string_lossy().into_owned();
                files.push((pid, fd_name, target.to_string_lossy().into_owned()));
            }
        }
    }
    files
}

/// Whether fd `fd` of `pid` is open for writing (its fdinfo flags, in octal).
fn opened_for_writing(pid: i32, fd: &str) -> bool {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) else {
        return false;
    };
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| i64::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|flags| flags & i64::from(libc::O_ACCMODE) != i64::from(libc::O_RDONLY))
}

/// The processes that hold the peer's end of a local TCP connection (`local` ours, `peer`
/// theirs): its socket's inode from /proc/net/tcp (or tcp6), then who holds that socket.
fn tcp_owners(local: SocketAddr, peer: SocketAddr) -> Result<Vec<i32>, String> {
    let inode = ["/proc/net/tcp", "/proc/net/tcp6"]
        .into_iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .find_map(|table| tcp_inode(&table, local, peer));
    match inode {
        Some(inode) => Ok(socket_holders(inode)),
        None => Err(format!(
            "its end of the connection, {peer}, is not a socket on this host that the mock can see"
        )),
    }
}

/// The inode of the socket whose local address is `peer` and remote `local`, in a /proc/net
/// tcp table.
fn tcp_inode(table: &str, local: SocketAddr, peer: SocketAddr) -> Option<u64> {
    let (ours, theirs) = (hex_addresses(local), hex_addresses(peer));
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (l, r, inode) = (f.get(1)?, f.get(2)?, f.get(9)?);
        let hit = theirs.iter().any(|t| t == l) && ours.iter().any(|o| o == r);
        hit.then(|| inode.parse().ok())
            .flatten()
            .filter(|i| *i != 0)
    })
}

/// An address as /proc/net/tcp{,6} writes it (each 32-bit word in the machine's order), in
/// each form it may take there (an IPv4 address on an IPv6 socket is mapped).
fn hex_addresses(addr: SocketAddr) -> Vec<String> {
    let words = |octets: &[u8]| -> String {
        octets
            .chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect()
    };
    let port = addr.port();
    match addr.ip() {
        IpAddr::V4(v4) => vec![
            format!("{}:{port:04X}", words(&v4.octets())),
            format!("{}:{port:04X}", words(&v4.to_ipv6_mapped().octets())),
        ],
        IpAddr::V6(v6) => {
            let mut forms = vec![format!("{}:{port:04X}", words(&v6.octets()))];
            if let Some(v4) = v6.to_ipv4_mapped() {
                forms.push(format!("{}:{port:04X}", words(&v4.octets())));
            }
            forms
        }
    }
}

/// The first ending signal caught, packed: its number in the high half, its sender's pid in the
/// low half (0: none yet). Written once, by the handler.
static CAUGHT: AtomicU64 = AtomicU64::new(0);

/// Records the first SIGTERM, SIGHUP or SIGINT with its sender (alongside any other handler of
/// them, e.g. tokio's). False when it cannot.
pub fn catch_senders() -> bool {
    [libc::SIGTERM, libc::SIGHUP, libc::SIGINT]
        .into_iter()
        .all(|signal| {
            // SAFETY: the action only stores an atomic (async-signal-safe).
            unsafe {
                signal_hook_registry::register_sigaction(signal, move |info: &libc::siginfo_t| {
                    // SAFETY: si_pid reads the sender field the kernel filled (meaningful for
                    // signals sent by kill/killpg, 0 for the kernel's own).
                    let sender = info.si_pid();
                    let packed = (u64::from(signal as u32) << 32) | u64::from(sender as u32);
                    let _ = CAUGHT.compare_exchange(0, packed, Ordering::SeqCst, Ordering::SeqCst);
                })
            }
            .is_ok()
        })
}

/// The signal caught so far: (its name, its sender's pid).
pub fn caught() -> Option<(&'static str, i32)> {
    let packed = CAUGHT.load(Ordering::SeqCst);
    if packed == 0 {
        return None;
    }
    let name = match (packed >> 32) as i32 {
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "SIGINT",
    };
    Some((name, packed as u32 as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_address_in_both_tables_forms() {
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let forms = hex_addresses(addr);
        if cfg!(target_endian = "little") {
            assert_eq!(forms[0], "0100007F:1F90");
            assert_eq!(forms[1], "0000000000000000FFFF00000100007F:1F90");
        }
        let table = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: {} {} 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0\n",
            hex_addresses("127.0.0.1:50000".parse().unwrap())[0],
            forms[0]
        );
        assert_eq!(
            tcp_inode(&table, addr, "127.0.0.1:50000".parse().unwrap()),
            Some(4242)
        );
        assert_eq!(
            tcp_inode(&table, addr, "127.0.0.1:50001".parse().unwrap()),
            None
        );
    }

    #[test]
    fn this_process_is_running_and_named() {
        let me = Process::of(std::process::id() as i32).unwrap();
        assert!(matches!(me.life(), Life::Running));
        assert!(me.named().starts_with(&format!("pid {} (", me.pid)));
        assert_eq!(
            wait_status(libc::SIGTERM),
            "killed by SIGTERM",
            "a wait status of a signalled process"
        );
        assert_eq!(wait_status(1 << 8), "ended by its own exit, status 1");
    }
}
