//! `--workdir DIR`: each run gets a scratch copy of DIR (the user's tree is never handed to the
//! agent), and the copy is read before and after the run, so that what a plan-mode run changed
//! can be named path by path.
//!
//! A file is its size, permission bits and SHA-256; a symbolic link its target; a directory
//! its presence. Times are not compared: a run that only reads (atime) or touches a file
//! (mtime) changed nothing that the next agent would see.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a scratch copy could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum WorkdirError {
    #[error("cannot make a scratch directory under {}: {cause}", base.display())]
    Make {
        base: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "cannot make a scratch directory under {}: every name tried is taken",
        base.display()
    )]
    NamesTaken { base: PathBuf },
    /// The user's `--workdir` tree could not be copied (a file in it that cannot be read).
    #[error("--workdir {}: cannot copy it: {cause}", from.display())]
    Copy {
        from: PathBuf,
        cause: std::io::Error,
    },
    #[error("reading {}: {cause}", root.display())]
    Read {
        root: PathBuf,
        cause: std::io::Error,
    },
}

impl crate::error::LayerError for WorkdirError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            // The user's tree: a usage error, as a --workdir that is not a directory is.
            WorkdirError::Copy { .. } => Class::Usage,
            // The temporary directory, or our own copy of the tree.
            WorkdirError::Make { .. }
            | WorkdirError::NamesTaken { .. }
            | WorkdirError::Read { .. } => Class::Run,
        }
    }
}

/// A directory of our own under the system's temporary directory, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// A new, empty scratch directory.
    pub fn new() -> Result<Scratch, WorkdirError> {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        for _ in 0..100 {
            let n = COUNT.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let path = base.join(format!(
                "agent-tck-workdir-{}-{n}-{nanos}",
                std::process::id()
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Scratch { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(cause) => return Err(WorkdirError::Make { base, cause }),
            }
        }
        Err(WorkdirError::NamesTaken { base })
    }

    /// A scratch copy of the tree at `from` (files, directories, symbolic links as links).
    pub fn copy_of(from: &Path) -> Result<Scratch, WorkdirError> {
        let scratch = Scratch::new()?;
        copy_tree(from, &scratch.path).map_err(|cause| WorkdirError::Copy {
            from: from.to_path_buf(),
            cause,
        })?;
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // An agent may have taken the write bit from a directory it made: give it back first.
        let _ = restore_writable(&self.path);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn restore_writable(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            let path = entry.path();
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
            let _ = restore_writable(&path);
        }
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            std::fs::create_dir(&dst)?;
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)?;
        }
        // Sockets, FIFOs and devices are not copied: an agent has no business with them.
    }
    Ok(())
}

/// What is at a path of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File {
        len: u64,
        mode: u32,
        sha256: Vec<u8>,
    },
    Link(PathBuf),
}

/// A tree as read: its paths (relative, `/`-separated) and what is at each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree(BTreeMap<String, Entry>);

impl Tree {
    /// Reads the tree under `root` (links are not followed).
    pub fn read(root: &Path) -> Result<Tree, WorkdirError> {
        let mut tree = Tree::default();
        tree.walk(root, "").map_err(|cause| WorkdirError::Read {
            root: root.to_path_buf(),
            cause,
        })?;
        Ok(tree)
    }

    fn walk(&mut self, dir: &Path, prefix: &str) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_symlink() {
                self.0.insert(name, Entry::Link(std::fs::read_link(&path)?));
            } else if kind.is_dir() {
                self.0.insert(name.clone(), Entry::Dir);
                self.walk(&path, &format!("{name}/"))?;
            } else if kind.is_file() {
                let meta = entry.metadata()?;
                self.0.insert(
                    name,
                    Entry::File {
                        len: meta.len(),
                        mode: meta.permissions().mode() & 0o7777,
                        sha256: sha256_of(&path)?,
                    },
                );
            }
        }
        Ok(())
    }

    /// How `after` differs from this tree: `added PATH`, `deleted PATH`, `changed PATH (what)`,
    /// in path order.
    pub fn changes(&self, after: &Tree) -> Vec<String> {
        let mut out = Vec::new();
        for (path, was) in &self.0 {
            match after.0.get(path) {
                None => out.push(format!("deleted {path}")),
                Some(now) if now != was => out.push(format!("changed {path} ({})", what(was, now))),
                Some(_) => {}
            }
        }
        for path in after.0.keys().filter(|p| !self.0.contains_key(*p)) {
            out.push(format!("added {path}"));
        }
        out.sort_by(|a, b| path_of(a).cmp(path_of(b)));
        out
    }
}

fn path_of(change: &str) -> &str {
    let rest = change.split_once(' ').map_or(change, |(_, r)| r);
    rest.split(" (").next().unwrap_or(rest)
}

fn what(was: &Entry, now: &Entry) -> String {
    match (was, now) {
        (
            Entry::File {
                len: a, mode: m, ..
            },
            Entry::File {
                len: b, mode: n, ..
            },
        ) => {
            if m != n && a == b && sha_equal(was, now) {
                format!("permissions {m:o} → {n:o}")
            } else if a != b {
                format!("{a} → {b} bytes")
            } else {
                "content".to_string()
            }
        }
        (Entry::Link(a), Entry::Link(b)) => format!("link {} → {}", a.display(), b.display()),
        _ => format!("{} → {}", kind(was), kind(now)),
    }
}

fn sha_equal(a: &Entry, b: &Entry) -> bool {
    matches!((a, b), (Entry::File { sha256: x, .. }, Entry::File { sha256: y, .. }) if x == y)
}

fn kind(e: &Entry) -> &'static str {
    match e {
        Entry::Dir => "directory",
        Entry::File { .. } => "file",
        Entry::Link(_) => "symbolic link",
    }
}

fn sha256_of(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(ctx.finish().as_ref().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Class, Error};

    /// The user's tree that cannot be copied is a usage error, through `--exec`'s error too;
    /// the temporary directory and our own copy are run errors. Messages as they always read.
    #[test]
    fn a_copy_of_the_users_tree_is_usage_and_our_own_directories_are_run() {
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let copy = WorkdirError::Copy {
            from: "proj".into(),
            cause: io(),
        };
        assert_eq!(
            Error::from(super::super::exec::ExecError::from(copy)).shown(),
            (
                Class::Usage,
                "--workdir proj: cannot copy it: permission denied".into()
            )
        );
        let make = WorkdirError::Make {
            base: "/tmp".into(),
            cause: io(),
        };
        assert_eq!(
            Error::from(make).shown(),
            (
                Class::Run,
                "cannot make a scratch directory under /tmp: permission denied".into()
            )
        );
        let taken = WorkdirError::NamesTaken {
            base: "/tmp".into(),
        };
        assert_eq!(
            Error::from(taken).shown(),
            (
                Class::Run,
                "cannot make a scratch directory under /tmp: every name tried is taken".into()
            )
        );
        let read = WorkdirError::Read {
            root: "/tmp/x".into(),
            cause: io(),
        };
        assert_eq!(
            Error::from(read).shown(),
            (Class::Run, "reading /tmp/x: permission denied".into())
        );
    }

    #[test]
    fn a_copy_reads_the_same_and_each_change_is_named() {
        let src = Scratch::new().unwrap();
        std::fs::create_dir(src.path().join("src")).unwrap();
        std::fs::write(src.path().join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(src.path().join("README.md"), "hello\n").unwrap();
        std::fs::write(src.path().join("gone.txt"), "x").unwrap();
        std::os::unix::fs::symlink("README.md", src.path().join("link")).unwrap();
        let copy = Scratch::copy_of(src.path()).unwrap();
        let before = Tree::read(copy.path()).unwrap();
        assert_eq!(before, Tree::read(src.path()).unwrap());
        assert_eq!(before.changes(&before), Vec::<String>::new());

        std::fs::write(copy.path().join("src/main.rs"), "fn main() { 1; }\n").unwrap();
        std::fs::write(copy.path().join("README.md"), "HELLO\n").unwrap();
        std::fs::remove_file(copy.path().join("gone.txt")).unwrap();
        std::fs::write(copy.path().join("new.txt"), "").unwrap();
        std::fs::remove_file(copy.path().join("link")).unwrap();
        std::os::unix::fs::symlink("src", copy.path().join("link")).unwrap();
        let after = Tree::read(copy.path()).unwrap();
        assert_eq!(
            before.changes(&after),
            vec![
                "changed README.md (content)",
                "deleted gone.txt",
                "changed link (link README.md → src)",
                "added new.txt",
                "changed src/main.rs (13 → 17 bytes)",
            ]
        );
        // The source was not touched, and the copy goes with its Scratch.
        assert_eq!(
            std::fs::read_to_string(src.path().join("README.md")).unwrap(),
            "hello\n"
        );
        let gone = copy.path().to_path_buf();
        drop(copy);
        assert!(!gone.exists());
    }

    #[test]
    fn a_touched_file_is_unchanged_and_a_chmod_is_named() {
        let dir = Scratch::new().unwrap();
        let file = dir.path().join("a.sh");
        std::fs::write(&file, "echo\n").unwrap();
        let before = Tree::read(dir.path()).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
        assert_eq!(
            before.changes(&Tree::read(dir.path()).unwrap()),
            Vec::<String>::new()
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        let changes = before.changes(&Tree::read(dir.path()).unwrap());
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(
            changes[0].starts_with("changed a.sh (permissions "),
            "{changes:?}"
        );
    }
}
