//! The HTTP providers against a fake server on 127.0.0.1: request shape, answers, and each
//! failure class.

use std::time::Duration;

use serde_json::{json, Value};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use sitetrail::classify::builtin::Builtin;
use sitetrail::classify::privacy::{Exclusions, PrivacyRouter};
use sitetrail::classify::{Classifier, ClassifyError};
use sitetrail::{Category, CategorySource};

use crate::support::fake_ai::*;

fn hosts(h: &[&str]) -> Vec<String> {
    h.iter().map(std::string::ToString::to_string).collect()
}

#[tokio::test]
async fn openai_request_is_strict_json_schema_with_only_the_hosts() {
    let server = MockServer::start().await;
    mount_openai_ok(&server).await;
    let c = openai(&format!("{}/v1/", server.uri()));
    let out = c
        .classify(&hosts(&["github.com", "bet365.example", "example.org"]))
        .await
        .unwrap();
    assert_eq!(out[0].as_ref().unwrap().category, Category::DevTech);
    assert_eq!(out[1].as_ref().unwrap().category, Category::Gambling);
    assert_eq!(out[2].as_ref().unwrap().source, CategorySource::Ai);

    let reqs = server.received_requests().await.unwrap();
    assert_eq!(reqs.len(), 1, "one request for the whole batch");
    let auth = reqs[0].headers.get("authorization").unwrap().to_str().unwrap();
    assert_eq!(auth, format!("Bearer {KEY}"));
    let body: Value = reqs[0].body_json().unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0);
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["role"], "system");
    for c in Category::ALL {
        assert!(
            msgs[0]["content"].as_str().unwrap().contains(c.id()),
            "system lists {c}"
        );
    }
    assert_eq!(msgs[1]["role"], "user");
    assert_eq!(
        msgs[1]["content"], "github.com\nbet365.example\nexample.org",
        "exactly the hosts"
    );
    let rf = &body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["strict"], true);
    let schema = &rf["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["results"]));
    assert_eq!(schema["additionalProperties"], false);
    let item = &schema["properties"]["results"]["items"];
    assert_eq!(item["required"], json!(["domain", "category", "confidence"]));
    assert_eq!(item["additionalProperties"], false);
    let ids: Vec<&str> = Category::ALL.iter().map(|c| c.id()).collect();
    assert_eq!(item["properties"]["category"]["enum"], json!(ids));
    assert_eq!(item["properties"]["confidence"]["type"], "number");
}

#[tokio::test]
async fn a_server_that_rejects_json_schema_is_asked_again_with_json_object() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_schema"}}),
        ))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {"message": "response_format type json_schema is not supported by this server"}
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_object"}}),
        ))
        .respond_with(openai_ok())
        .mount(&server)
        .await;
    let c = openai_plain(&format!("{}/v1", server.uri()));
    let out = c.classify(&hosts(&["netflix.com"])).await.unwrap();
    assert_eq!(out[0].as_ref().unwrap().category, Category::VideoStreaming);
    c.classify(&hosts(&["spotify.com"])).await.unwrap();

    let b = bodies(&server).await;
    let kinds: Vec<&str> = b
        .iter()
        .map(|b| b["response_format"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["json_schema", "json_object", "json_object"],
        "fallback is remembered"
    );
    let system = b[1]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("\"results\"") && system.contains("\"confidence\""),
        "schema described: {system}"
    );
    assert_eq!(user_message(&b[1]), "netflix.com");
}

#[tokio::test]
async fn refusal_length_and_bad_answers() {
    let server = MockServer::start().await;
    let c = openai(&format!("{}/v1", server.uri()));
    let respond = |body: Value| async {
        server.reset().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&server)
            .await;
    };
    respond(json!({"choices": [{"finish_reason": "stop",
        "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}]}))
    .await;
    let e = c.classify(&hosts(&["a.example"])).await.unwrap_err();
    assert!(
        matches!(&e, ClassifyError::Permanent(m) if m.contains("refused")),
        "{e:?}"
    );

    respond(json!({"choices": [{"finish_reason": "length",
        "message": {"role": "assistant", "content": "{\"results\": [{\"domain\": \"a.ex"}}]}))
    .await;
    let e = c.classify(&hosts(&["a.example"])).await.unwrap_err();
    assert!(
        matches!(&e, ClassifyError::Transient(m) if m.contains("cut off")),
        "{e:?}"
    );

    // One host answered outside the taxonomy, one missing: each fails alone.
    respond(completion(
        r#"{"results":[{"domain":"a.example","category":"weather","confidence":1},
                       {"domain":"b.example","category":"news","confidence":1}]}"#,
    ))
    .await;
    let out = c
        .classify(&hosts(&["a.example", "b.example", "c.example"]))
        .await
        .unwrap();
    assert!(out[0].as_ref().unwrap_err().contains("not one of the categories"));
    assert_eq!(out[1].as_ref().unwrap().category, Category::News);
    assert!(out[2].as_ref().unwrap_err().contains("no answer for c.example"));

    respond(completion("Sure! Here are the categories: news")).await;
    assert!(matches!(
        c.classify(&hosts(&["a.example"])).await,
        Err(ClassifyError::Transient(_))
    ));
}

async fn error_for(template: ResponseTemplate) -> ClassifyError {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    openai(&format!("{}/v1", server.uri()))
        .classify(&hosts(&["a.example"]))
        .await
        .unwrap_err()
}

#[tokio::test]
async fn http_failures_map_to_their_classes() {
    let e = error_for(ResponseTemplate::new(429).insert_header("retry-after-ms", "1500")).await;
    assert!(
        matches!(e, ClassifyError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_millis(1500)),
        "{e:?}"
    );
    let e = error_for(ResponseTemplate::new(429).insert_header("retry-after", "7")).await;
    assert!(
        matches!(e, ClassifyError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(7))
    );
    let e = error_for(ResponseTemplate::new(429).insert_header("x-ratelimit-reset-requests", "2m0s")).await;
    assert!(
        matches!(e, ClassifyError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(120))
    );
    let quota = json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}});
    let e = error_for(ResponseTemplate::new(429).set_body_json(quota)).await;
    assert!(
        matches!(&e, ClassifyError::NeedsUser(m) if m.contains("quota")),
        "{e:?}"
    );
    for code in [401, 403] {
        let e = error_for(ResponseTemplate::new(code)).await;
        assert!(
            matches!(&e, ClassifyError::NeedsUser(m) if m.contains("API key")),
            "{code}: {e:?}"
        );
    }
    let e = error_for(
        ResponseTemplate::new(404)
            .set_body_json(json!({"error": {"message": "The model `x` does not exist"}})),
    )
    .await;
    assert!(
        matches!(&e, ClassifyError::NeedsUser(m) if m.contains("does not exist")),
        "{e:?}"
    );
    for code in [500, 502, 503, 529] {
        let e = error_for(ResponseTemplate::new(code)).await;
        assert!(
            matches!(&e, ClassifyError::Transient(m) if m.contains(&code.to_string())),
            "{code}: {e:?}"
        );
    }
    let e = error_for(ResponseTemplate::new(200).set_body_string("<html>gateway</html>")).await;
    assert!(
        matches!(&e, ClassifyError::Transient(m) if m.contains("not JSON")),
        "{e:?}"
    );
    // Consuming errors cost an attempt; the others don't.
    assert!(!ClassifyError::Offline(String::new()).consumes_attempt());
    assert!(!ClassifyError::NeedsUser(String::new()).consumes_attempt());
    assert!(ClassifyError::Transient(String::new()).consumes_attempt());
}

#[tokio::test]
async fn timeouts_are_transient_and_refused_connections_offline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let c = sitetrail::classify::openai::OpenAi::new(sitetrail::classify::openai::OpenAiConfig {
        base_url: server.uri(),
        model: "m".into(),
        api_key: None,
        http: sitetrail::classify::http::HttpOptions {
            connect_timeout: Duration::from_secs(1),
            total_timeout: Duration::from_millis(200),
        },
    })
    .unwrap();
    let e = c.classify(&hosts(&["a.example"])).await.unwrap_err();
    assert!(
        matches!(&e, ClassifyError::Transient(m) if m.contains("in time")),
        "{e:?}"
    );

    let port = {
        // 127.0.0.3: no other test listens there, so the freed port stays closed.
        let l = std::net::TcpListener::bind("127.0.0.3:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = openai(&format!("http://127.0.0.3:{port}/v1"))
        .classify(&hosts(&["a.example"]))
        .await
        .unwrap_err();
    assert!(matches!(e, ClassifyError::Offline(_)), "{e:?}");
}

#[tokio::test]
async fn a_body_cut_off_mid_answer_is_transient() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let _ = sock.read(&mut buf).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n";
        sock.write_all(head.as_bytes()).await.unwrap();
        sock.write_all(br#"{"choices": [{"message": {"con"#)
            .await
            .unwrap();
        // Dropping the socket cuts the body short.
    });
    let e = openai(&format!("http://{addr}/v1"))
        .classify(&hosts(&["a.example"]))
        .await
        .unwrap_err();
    assert!(matches!(e, ClassifyError::Transient(_)), "{e:?}");
    server.await.unwrap();
}

#[tokio::test]
async fn a_server_echoing_the_key_cannot_leak_it() {
    let server = MockServer::start().await;
    mount_key_echo(&server, "Incorrect API key provided:").await;
    let c = openai_plain(&format!("{}/v1", server.uri()));
    let e = c.classify(&hosts(&["a.example"])).await.unwrap_err();
    let shown = format!("{e} {e:?} {c:?} {}", sitetrail::Error::from(e.clone()));
    assert!(!shown.contains(KEY), "the key leaked: {shown}");
    assert!(
        shown.contains("Incorrect API key provided: Bearer ***"),
        "{shown}"
    );
}

#[tokio::test]
async fn ollama_uses_native_chat_with_the_schema_in_format() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/chat"))
        .respond_with(|req: &Request| {
            ResponseTemplate::new(200).set_body_json(json!({
                "model": "llama-test", "done": true, "done_reason": "stop",
                "message": {"role": "assistant", "content": answer_for(&hosts_of(req))}
            }))
        })
        .mount(&server)
        .await;
    let c = ollama(&server.uri());
    let out = c.classify(&hosts(&["youtube.com", "chase.com"])).await.unwrap();
    assert_eq!(out[0].as_ref().unwrap().category, Category::VideoStreaming);
    assert_eq!(out[1].as_ref().unwrap().category, Category::Finance);
    let b = &bodies(&server).await[0];
    assert_eq!(b["stream"], false);
    assert_eq!(b["model"], "llama-test");
    assert_eq!(
        b["format"]["properties"]["results"]["items"]["required"],
        json!(["domain", "category", "confidence"])
    );
    assert_eq!(user_message(b), "youtube.com\nchase.com");

    server.reset().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"error": "model \"llama-test\" not found, try pulling it first"})),
        )
        .mount(&server)
        .await;
    let e = c.classify(&hosts(&["a.example"])).await.unwrap_err();
    assert!(
        matches!(&e, ClassifyError::NeedsUser(m) if m.contains("not found")),
        "{e:?}"
    );
}

#[tokio::test]
async fn private_and_excluded_hosts_never_reach_the_remote_provider() {
    let server = MockServer::start().await;
    mount_openai_ok(&server).await;
    let router = PrivacyRouter::new(
        openai(&format!("{}/v1", server.uri())),
        std::sync::Arc::new(Builtin),
        Exclusions::parse(&["*.corp.example", "bank.example"]).unwrap(),
    );
    let asked = hosts(&[
        "localhost",
        "127.0.0.1",
        "[::1]",
        "printer",
        "nas.local",
        "git.internal",
        "tv.lan",
        "wiki.corp.example",
        "bank.example",
        "github.com",
        "news.example.org",
    ]);
    let out = router.classify(&asked).await.unwrap();
    assert_eq!(out.len(), asked.len());
    for (host, o) in asked.iter().zip(&out) {
        let v = o.as_ref().unwrap();
        let remote = host == "github.com" || host == "news.example.org";
        let expected = if remote {
            CategorySource::Ai
        } else {
            CategorySource::Builtin
        };
        assert_eq!(v.source, expected, "{host}");
    }
    let b = bodies(&server).await;
    assert_eq!(b.len(), 1);
    assert_eq!(user_message(&b[0]), "github.com\nnews.example.org");

    // A batch of private hosts only makes no request at all.
    router
        .classify(&hosts(&["localhost", "nas.local"]))
        .await
        .unwrap();
    assert_eq!(bodies(&server).await.len(), 1);
}

/// A resolver that cannot resolve anything, as when the network or DNS is down.
struct NoDns;

impl reqwest::dns::Resolve for NoDns {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move { Err(format!("failed to lookup address information: {host}").into()) })
    }
}

#[tokio::test]
async fn a_dns_failure_is_offline() {
    let client = reqwest::Client::builder()
        .dns_resolver(std::sync::Arc::new(NoDns))
        .build()
        .unwrap();
    let e = client
        .post("http://api.provider.example/v1/chat/completions")
        .send()
        .await
        .unwrap_err();
    let secrets = sitetrail::classify::secret::Secrets::default();
    let url = url::Url::parse("http://api.provider.example/v1/chat/completions").unwrap();
    let ctx = sitetrail::classify::http::AnswerContext {
        provider: "openai",
        endpoint: &url,
        secrets: &secrets,
        now: chrono::Utc::now(),
    };
    let mapped = sitetrail::classify::http::send_error(&ctx, &e);
    assert!(
        matches!(&mapped, ClassifyError::Offline(m) if m.contains("lookup")),
        "{mapped:?}"
    );
}
