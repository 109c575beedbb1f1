use super::*;
use crate::error::{Class, Error};

#[test]
fn a_journal_not_created_is_usage_and_a_port_not_listened_on_is_run() {
    let journal = Librarian::new(Vec::new(), Flaws::default())
        .journaling(std::path::Path::new("/nonexistent-dir/j.jsonl"))
        .err()
        .unwrap();
    assert!(
        matches!(&journal, ServerError::Journal { path, .. } if path == "/nonexistent-dir/j.jsonl"),
        "{journal:?}"
    );
    let message = journal.to_string();
    assert!(
        message.starts_with("--journal /nonexistent-dir/j.jsonl: cannot create: "),
        "{message}"
    );
    assert_eq!(Error::from(journal).shown(), (Class::Usage, message));
    let listen = ServerError::Listen("cannot listen on 127.0.0.1:1: denied".into());
    assert_eq!(
        Error::from(listen).shown(),
        (Class::Run, "cannot listen on 127.0.0.1:1: denied".into())
    );
}
