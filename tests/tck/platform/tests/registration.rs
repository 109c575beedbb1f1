//! The platform's tests: registration, the admin token, and tasks the platform refuses.

use super::*;

#[deadline::test]
async fn registration_answers_201_409_400_and_agents_can_be_listed_and_removed() {
    let platform = start(PlatformConfig::default()).await;
    let body = json!({
        "name": "sec_analyst-1",
        "domain": "application security",
        "base_url": "http://127.0.0.1:9/agents/a1",
        "api_key": "agent-secret",
        "capabilities": ["security"],
    });
    let (status, created) = register_body(&platform, body.clone()).await;
    assert_eq!(status, 201);
    assert_eq!(
        created,
        json!({
            "name": "sec_analyst-1",
            "domain": "application security",
            "base_url": "http://127.0.0.1:9/agents/a1",
            "capabilities": ["security"],
            "mode": "sync",
        })
    );
    let (status, conflict) = register_body(&platform, body).await;
    assert_eq!(status, 409);
    assert_eq!(
        conflict["error"],
        "agent name already registered: sec_analyst-1"
    );

    for (bad, needle) in [
        (
            json!({"base_url": "http://127.0.0.1:9"}),
            "name is required",
        ),
        (
            json!({"name": "1abc", "base_url": "http://127.0.0.1:9"}),
            "invalid",
        ),
        (
            json!({"name": "a b", "base_url": "http://127.0.0.1:9"}),
            "invalid",
        ),
        (json!({"name": "ok"}), "base_url is required"),
        (
            json!({"name": "ok", "base_url": "ftp://host"}),
            "not supported",
        ),
        (
            json!({"name": 7, "base_url": "http://127.0.0.1:9"}),
            "invalid registration",
        ),
    ] {
        let (status, answer) = register_body(&platform, bad.clone()).await;
        assert_eq!(status, 400, "{bad}");
        assert!(text(&answer, "error").contains(needle), "{bad}: {answer}");
    }

    let (status, list) = call(&platform, "GET", "/api/v1/agents", None, None).await;
    assert_eq!(
        (status, list[0]["name"].clone()),
        (200, json!("sec_analyst-1"))
    );
    assert!(list[0].get("api_key").is_none());
    assert_eq!(platform.registered(), ["sec_analyst-1"]);
    let path = "/api/v1/agents/sec_analyst-1";
    assert_eq!(call(&platform, "DELETE", path, None, None).await.0, 204);
    assert_eq!(call(&platform, "DELETE", path, None, None).await.0, 404);
    assert!(platform.registered().is_empty());
    platform.stop().await;
}

#[deadline::test]
async fn loopback_agents_are_refused_when_the_platform_says_so() {
    let platform = start(PlatformConfig {
        refuse_loopback: true,
        ..PlatformConfig::default()
    })
    .await;
    for url in [
        "http://127.0.0.1:9",
        "http://127.1.2.3:9/x",
        "http://localhost:9",
        "http://LOCALHOST.:9",
        "http://[::1]:9",
        "http://0.0.0.0:9",
    ] {
        let (status, answer) =
            register_body(&platform, json!({"name": "a", "base_url": url})).await;
        assert_eq!(status, 400, "{url}");
        assert!(
            text(&answer, "error").contains("loopback"),
            "{url}: {answer}"
        );
    }
    let far = json!({"name": "a", "base_url": "https://agents.example/a"});
    assert_eq!(register_body(&platform, far).await.0, 201);
    platform.stop().await;
}

/// The guard of KangaKode/aiscaffold (`validate_url`), its 400 and its words: loopback,
/// private, link-local, `localhost`, `*.internal`; a public address, or a name that does not
/// resolve, passes.
#[deadline::test]
async fn a_request_forgery_guard_refuses_loopback_private_and_internal_base_urls() {
    let platform = start(PlatformConfig {
        refuse_private: true,
        ..PlatformConfig::default()
    })
    .await;
    for (url, words) in [
        (
            "http://127.0.0.1:9",
            "cannot point to private/internal addresses",
        ),
        ("http://localhost:9", "cannot point to localhost"),
        (
            "http://10.1.2.3:9",
            "cannot point to private/internal addresses",
        ),
        (
            "http://172.16.0.9:9",
            "cannot point to private/internal addresses",
        ),
        (
            "http://192.168.1.5:9000",
            "cannot point to private/internal addresses",
        ),
        (
            "http://169.254.169.254",
            "cannot point to private/internal addresses",
        ),
        (
            "http://[::1]:9",
            "cannot point to private/internal addresses",
        ),
        (
            "http://[fd00::5]:9",
            "cannot point to private/internal addresses",
        ),
        (
            "http://metadata.google.internal",
            "cannot point to metadata.google.internal",
        ),
        (
            "http://mocks.internal:9000",
            "cannot point to internal hostnames",
        ),
    ] {
        let (status, answer) =
            register_body(&platform, json!({"name": "a", "base_url": url})).await;
        assert_eq!(status, 400, "{url}");
        assert_eq!(text(&answer, "error"), format!("base_url {words}"), "{url}");
    }
    for (n, url) in [
        "http://203.0.113.7:9000",
        "https://agents.example.invalid/a",
    ]
    .iter()
    .enumerate()
    {
        let body = json!({"name": format!("a{n}"), "base_url": url});
        assert_eq!(register_body(&platform, body).await.0, 201, "{url}");
    }
    platform.stop().await;
}

#[deadline::test]
async fn the_admin_token_guards_the_api() {
    let platform = start(PlatformConfig {
        admin_token: Some(ADMIN.into()),
        ..PlatformConfig::default()
    })
    .await;
    let body = json!({"name": "a", "base_url": "http://127.0.0.1:9"});
    let path = "/api/v1/agents";
    for token in [None, Some("wrong")] {
        assert_eq!(
            call(&platform, "POST", path, Some(&body), token).await.0,
            401
        );
        assert_eq!(call(&platform, "GET", path, None, token).await.0, 401);
    }
    assert_eq!(
        call(&platform, "POST", path, Some(&body), Some(ADMIN))
            .await
            .0,
        201
    );
    assert_eq!(platform.registered(), ["a"]);
    platform.stop().await;
}

#[deadline::test]
async fn a_task_naming_an_unknown_agent_or_lacking_content_is_a_400() {
    let platform = start(PlatformConfig::default()).await;
    let (status, answer) = task(&platform, json!({"content": CONTENT, "agents": ["ghost"]})).await;
    assert_eq!(
        (status, text(&answer, "error")),
        (400, "unknown agent: ghost")
    );
    assert_eq!(task(&platform, json!({"agents": []})).await.0, 400);
    platform.stop().await;
}
