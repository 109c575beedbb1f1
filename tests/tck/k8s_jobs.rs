//! The Kubernetes Jobs of `deploy/k8s/`, run as they are written: each pod's shell command of the
//! certify Job (its shard of the targets, `JOB_COMPLETION_INDEX` 0..completions) and then the
//! merge Job's, with `/config` and `/reports` moved to a temporary folder and `agent-tck` on the
//! PATH. The merged report must give the verdicts of one run over the whole list, the merge must
//! gate (exit 1 when a target fails), and a pod retried in the same Job resumes.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::support::{case_statuses, tck, text, Spawned, TempDir, EXE, RUN_DEADLINE};

/// The first container's shell script of a Job file, and the Job's `completions`.
fn job_script(file: &str) -> (String, Option<u64>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let yaml = std::fs::read_to_string(&path).unwrap();
    let job: Value = serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{file}: {e}"));
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["command"], serde_json::json!(["/bin/sh", "-c"]));
    let script = container["args"][0]
        .as_str()
        .unwrap_or_else(|| panic!("{file}: no script in args"))
        .to_string();
    (script, job["spec"]["completions"].as_u64())
}

/// Runs a Job's `script` as its pod would, with the paths moved under `root`.
fn pod(script: &str, root: &TempDir, env: &[(&str, String)]) -> std::process::Output {
    let bin = root.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = std::path::Path::new(&bin).join("agent-tck");
    if !link.exists() {
        std::os::unix::fs::symlink(EXE, &link).unwrap();
    }
    let script = script
        .replace("/config/", &format!("{}/", root.path("config")))
        .replace("/reports", &root.path("reports"));
    let mut command = std::process::Command::new("/bin/sh");
    command.args(["-c", &script]).env(
        "PATH",
        format!("{bin}:{}", std::env::var("PATH").unwrap_or_default()),
    );
    for (k, v) in env {
        command.env(k, v);
    }
    crate::support::run_within(command, RUN_DEADLINE)
}

fn verdicts(path: &str) -> BTreeSet<(String, String)> {
    let report: Value = serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    case_statuses(&report).into_iter().collect()
}

/// The targets' names: nine conforming agents and a broken one.
fn names() -> impl Iterator<Item = String> {
    (0..9)
        .map(|i| format!("agent-{i}"))
        .chain(["broken".into()])
}

#[test]
fn the_certify_and_merge_jobs_give_one_runs_verdicts_and_a_retried_pod_resumes() {
    let root = TempDir::new("k8s-jobs");
    // Ten agents of a round-table fleet, one of them failing a MUST case.
    let fleet_file = root.path("fleet.yaml");
    let mut fleet = String::from("layout: shared\nport: 0\nagents:\n");
    for i in 0..9 {
        fleet.push_str(&format!("  - {{ name: agent-{i} }}\n"));
    }
    fleet.push_str("  - { name: broken, behaviors: [\"wrong-schema:missing-field@analyze\"] }\n");
    std::fs::write(&fleet_file, fleet).unwrap();
    let mut served = Spawned::tck(
        &["mock", "fleet", "--config", &fleet_file, "--quiet"],
        Duration::from_secs(400),
    );
    let banner = served.line();
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("{banner}"))
        .to_string();
    std::fs::create_dir_all(root.path("config")).unwrap();
    let targets = root.path("config/targets.yaml");
    let mut list = String::from("targets:\n");
    for name in names() {
        list.push_str(&format!("  - name: {name}\n    url: {url}/agents/{name}\n"));
    }
    std::fs::write(&targets, list).unwrap();
    std::fs::create_dir_all(root.path("reports")).unwrap();

    // One run over the whole list: what the Jobs must give.
    let whole = root.path("whole.json");
    let out = tck(&[
        "probe",
        "roundtable",
        "--targets",
        &targets,
        "--out-dir",
        &root.path("whole"),
        "--json",
        &whole,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let (certify, completions) = job_script("deploy/k8s/certify-job.yaml");
    let shards = completions.expect("the certify Job's completions");
    assert!(
        certify.contains(&format!("\"$K/{shards}\"")),
        "--shard K/{shards}, as many shards as completions: {certify}"
    );
    let run = ("RUN", "job-uid-1".to_string());
    for index in 0..shards {
        let env = [("JOB_COMPLETION_INDEX", index.to_string()), run.clone()];
        let out = pod(&certify, &root, &env);
        // A shard whose agents fail still completes: the merge gates.
        assert_eq!(out.status.code(), Some(0), "pod {index}: {}", text(&out));
    }
    let (merge, _) = job_script("deploy/k8s/merge-job.yaml");
    let out = pod(&merge, &root, &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the merge gates: {}",
        text(&out)
    );
    let all = root.path("reports/all.json");
    assert_eq!(verdicts(&all), verdicts(&whole));
    for file in ["all.xml", "all.html"] {
        let path = root.path(&format!("reports/{file}"));
        assert!(
            std::fs::metadata(&path).is_ok_and(|m| m.len() > 0),
            "{path}"
        );
    }

    // A pod retried in the same Job resumes its shard; the next Job starts afresh.
    let shard_of_broken = (1..=shards)
        .find(|k| agent_tck::targets::in_shard("broken", (*k, shards)))
        .unwrap();
    let env = [
        ("JOB_COMPLETION_INDEX", (shard_of_broken - 1).to_string()),
        run,
    ];
    let out = pod(&certify, &root, &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("resumed "), "{}", text(&out));
    assert!(text(&out).contains("; 0 to run"), "{}", text(&out));
    let in_that_shard = names()
        .filter(|n| agent_tck::targets::in_shard(n, (shard_of_broken, shards)))
        .count();
    let env = [
        ("JOB_COMPLETION_INDEX", (shard_of_broken - 1).to_string()),
        ("RUN", "job-uid-2".to_string()),
    ];
    let out = pod(&certify, &root, &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("--resume: no report in ")
            && text(&out).contains(&format!("; {in_that_shard} to run")),
        "{}",
        text(&out)
    );
    let _ = served.interrupt(Duration::from_secs(20));
}
