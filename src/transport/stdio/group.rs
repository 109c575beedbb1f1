//! The agent's process group: signalling it, telling whether anything of it still runs, and
//! naming how its leader ended.

use std::process::ExitStatus;

/// `status 3`, `signal 9 (KILL)`, `signal 11 (SEGV), core dumped`.
pub(super) fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("status {code}");
    }
    match status.signal() {
        Some(sig) => {
            let name = match sig {
                libc::SIGHUP => "HUP",
                libc::SIGINT => "INT",
                libc::SIGQUIT => "QUIT",
                libc::SIGILL => "ILL",
                libc::SIGTRAP => "TRAP",
                libc::SIGABRT => "ABRT",
                libc::SIGBUS => "BUS",
                libc::SIGFPE => "FPE",
                libc::SIGKILL => "KILL",
                libc::SIGSEGV => "SEGV",
                libc::SIGPIPE => "PIPE",
                libc::SIGALRM => "ALRM",
                libc::SIGTERM => "TERM",
                libc::SIGXCPU => "XCPU",
                libc::SIGXFSZ => "XFSZ",
                _ => "",
            };
            let mut text = if name.is_empty() {
                format!("signal {sig}")
            } else {
                format!("signal {sig} ({name})")
            };
            if status.core_dumped() {
                text.push_str(", core dumped");
            }
            text
        }
        None => format!("{status}"),
    }
}

/// Sends `signal` to process group `pgid`; true if it was delivered to some process.
pub(super) fn signal_group(pgid: i32, signal: libc::c_int) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: killpg has no memory-safety preconditions; pgid > 1 never names our own group
    // (0) or every process (-1).
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// Whether any process of group `pgid` is alive. Zombies (exited, not yet reaped by whoever
/// inherited them) do not count: they run nothing and hold no pipe.
pub(super) fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: as in `signal_group`; signal 0 only checks for existence and permission.
    if unsafe { libc::killpg(pgid, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
    }
    #[cfg(target_os = "linux")]
    {
        live_members_linux(pgid).unwrap_or(true)
    }
    #[cfg(not(target_os = "linux"))]
    {
        true
    }
}

/// Scans /proc for a process of group `pgid` that is not a zombie; `None` if /proc is unreadable.
#[cfg(target_os = "linux")]
fn live_members_linux(pgid: i32) -> Option<bool> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // Gone since the listing: skip.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields.next().unwrap_or("");
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        if group == Some(pgid) && state != "Z" && state != "X" {
            return Some(true);
        }
    }
    Some(false)
}

/// Kills the group when dropped, unless disarmed (the group is known to be gone).
pub(super) struct GroupGuard {
    pub(super) pgid: i32,
    pub(super) armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            signal_group(self.pgid, libc::SIGKILL);
        }
    }
}
