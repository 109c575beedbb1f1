//! The platform's tests: each variant's deviation shows under it and under no other.

use super::*;

#[test]
fn variants_have_distinct_names() {
    let all = Variant::ALL.iter().chain(&Variant::SHAPES);
    let mut names: Vec<&str> = all.map(|v| v.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Variant::ALL.len() + Variant::SHAPES.len());
}

/// Runs `scenario` against every variant at once and asserts that the deviation it observes
/// shows under `variant` and under no other (Conforming included).
async fn assert_only<F, Fut>(variant: Variant, scenario: F)
where
    F: Fn(Variant) -> Fut,
    Fut: Future<Output = bool>,
{
    let observed = join_all(Variant::ALL.map(scenario)).await;
    let deviating: Vec<&str> = Variant::ALL
        .iter()
        .zip(observed)
        .filter(|(_, deviates)| *deviates)
        .map(|(v, _)| v.name())
        .collect();
    assert_eq!(deviating, [variant.name()], "variants that deviated");
}

/// Two reference agents, `a` answering with `finding` as its first finding; what `b` got
/// at /challenge.
async fn b_challenge_after_a_finds(variant: Variant, finding: String) -> Value {
    let agents = [
        TestAgent::new(
            "a",
            rewriting("a", "analyze", move |x| {
                x["observations"][0]["finding"] = json!(finding)
            }),
        )
        .await,
        TestAgent::reference("b").await,
    ];
    completed(variant, &agents).await;
    agents[1].bodies("challenge").remove(0)
}

async fn a_hanging_agent_hangs_the_task(variant: Variant) -> bool {
    let agents = [
        TestAgent::hanging("h").await,
        TestAgent::reference("a").await,
    ];
    deliberate(variant, &agents).await.is_none()
}

async fn invalid_json_answers_500(variant: Variant) -> bool {
    let agents = [
        TestAgent::new("bad", always(invalid_json())).await,
        TestAgent::reference("a").await,
    ];
    completed(variant, &agents).await.0 == 500
}

async fn a_nul_reaches_another_agent(variant: Variant) -> bool {
    let challenge = b_challenge_after_a_finds(variant, "before\u{0}after".into()).await;
    any_string(&challenge, &|s| s.contains('\0'))
}

async fn a_long_string_reaches_another_agent_whole(variant: Variant) -> bool {
    let challenge = b_challenge_after_a_finds(variant, "x".repeat(60_000)).await;
    any_string(&challenge, &|s| s.chars().count() > MAX_CHARS)
}

async fn a_failed_agent_sits_at_the_table(variant: Variant) -> bool {
    let agents = [
        TestAgent::new("f", always(Reply::error(500, "boom"))).await,
        TestAgent::reference("a").await,
        TestAgent::reference("b").await,
    ];
    completed(variant, &agents).await;
    other_names(&agents[2].bodies("challenge")[0]).contains(&"f".to_string())
}

async fn an_agent_sees_its_own_analysis(variant: Variant) -> bool {
    let agents = [
        TestAgent::reference("a").await,
        TestAgent::reference("b").await,
    ];
    completed(variant, &agents).await;
    other_names(&agents[0].bodies("challenge")[0]).contains(&"a".to_string())
}

async fn a_keyed_agent_gets_no_bearer(variant: Variant) -> bool {
    let agents = [TestAgent::keyed("a").await, TestAgent::reference("b").await];
    completed(variant, &agents).await;
    let seen = agents[0].seen();
    assert!(!seen.is_empty(), "{}: a got nothing", variant.name());
    seen.iter().any(|s| s.authorization.is_none())
}

async fn a_challenge_lacks_the_task_id(variant: Variant) -> bool {
    let agents = [
        TestAgent::reference("a").await,
        TestAgent::reference("b").await,
    ];
    completed(variant, &agents).await;
    agents
        .iter()
        .flat_map(|a| a.bodies("challenge"))
        .any(|body| body.get("task_id").is_none())
}

#[deadline::test]
async fn no_timeout_hangs_on_a_hanging_agent() {
    assert_only(Variant::NoTimeout, a_hanging_agent_hangs_the_task).await;
}

#[deadline::test]
async fn crash_on_invalid_json_answers_500() {
    assert_only(Variant::CrashOnInvalidJson, invalid_json_answers_500).await;
}

#[deadline::test]
async fn no_nul_stripping_forwards_nul_characters() {
    assert_only(Variant::NoNulStripping, a_nul_reaches_another_agent).await;
}

#[deadline::test]
async fn no_truncation_forwards_long_strings_whole() {
    assert_only(
        Variant::NoTruncation,
        a_long_string_reaches_another_agent_whole,
    )
    .await;
}

#[deadline::test]
async fn keeps_failed_agents_puts_them_in_other_analyses() {
    assert_only(Variant::KeepsFailedAgents, a_failed_agent_sits_at_the_table).await;
}

#[deadline::test]
async fn own_analysis_in_challenge_sends_an_agent_its_own_analysis() {
    assert_only(
        Variant::OwnAnalysisInChallenge,
        an_agent_sees_its_own_analysis,
    )
    .await;
}

#[deadline::test]
async fn no_bearer_sends_no_authorization() {
    assert_only(Variant::NoBearer, a_keyed_agent_gets_no_bearer).await;
}

#[deadline::test]
async fn no_task_id_omits_it_from_challenges() {
    assert_only(Variant::NoTaskId, a_challenge_lacks_the_task_id).await;
}
