//! Image backends (HTTP adapters of [`crate::domain::ports::ImageBackend`]): ComfyUI, and any
//! OpenAI-compatible images endpoint. A failure carries the HTTP status and the backend's text
//! for classification only (SPEC T8); the only value a reason may name is the model file the
//! ComfyUI workflow sent.

pub mod comfyui;
pub mod openai_images;

use std::time::Duration;

/// The HTTP client image backends share. A redirect is followed only within the backend's own
/// origin (a few hops): one to another origin would carry the request, and the images it
/// answers with, somewhere the operator never named; it is answered as the 3xx it is.
pub(crate) fn http() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::custom(same_origin_only))
        .build()
}

/// At most this many redirects within the origin.
const REDIRECTS: usize = 3;

fn same_origin_only(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let same = attempt
        .previous()
        .first()
        .is_some_and(|first| first.origin() == attempt.url().origin());
    if same && attempt.previous().len() <= REDIRECTS {
        attempt.follow()
    } else {
        attempt.stop()
    }
}

/// A backend failure from an HTTP answer (status and text) or a transport error.
pub(crate) fn failure(
    status: Option<u16>,
    message: String,
    workflow_model_file: Option<String>,
) -> crate::domain::provider_failure::ProviderFailure {
    crate::domain::provider_failure::ProviderFailure {
        status,
        message,
        workflow_model_file,
    }
}

/// A backend failure from a body that could not be used: a broken connection is a network
/// failure, an answer too large or not the expected JSON a bad answer from the server.
pub(crate) fn body_failure(
    what: &str,
    error: &crate::http_body::BodyError,
    workflow_model_file: Option<String>,
) -> crate::domain::provider_failure::ProviderFailure {
    let status = match error {
        crate::http_body::BodyError::Read(_) => None,
        _ => Some(502),
    };
    failure(status, format!("{what}: {error}"), workflow_model_file)
}

/// The configured image backend.
pub fn backend(
    config: &crate::config::ImageWorkerConfig,
    secrets: &crate::config::Secrets,
) -> anyhow::Result<std::sync::Arc<dyn crate::domain::ports::ImageBackend>> {
    use crate::config::ImageBackendKind;
    use anyhow::Context as _;
    Ok(match config.backend {
        ImageBackendKind::None => std::sync::Arc::new(crate::domain::ports::NoBackend),
        ImageBackendKind::Comfyui => {
            let text = std::fs::read_to_string(&config.comfyui_workflow).with_context(|| {
                format!(
                    "image_worker.comfyui_workflow: cannot read {}",
                    config.comfyui_workflow
                )
            })?;
            let workflow = serde_json::from_str(&text).with_context(|| {
                format!(
                    "image_worker.comfyui_workflow: {} is not JSON",
                    config.comfyui_workflow
                )
            })?;
            std::sync::Arc::new(comfyui::ComfyUi::new(
                &config.comfyui_url,
                workflow,
                config.max_image_bytes,
            )?)
        }
        ImageBackendKind::Openai => {
            let key = secrets
                .images_key
                .clone()
                .or_else(|| secrets.provider_keys.first().cloned());
            std::sync::Arc::new(openai_images::OpenAiImages::new(
                &config.openai_url,
                &config.openai_model,
                key,
                config.max_image_bytes,
            )?)
        }
    })
}

#[cfg(test)]
mod tests {
    /// A server on 127.0.0.1: `/here` redirects to its own `/there`, `/away` to `elsewhere`, and
    /// `/there` answers 200.
    async fn server(elsewhere: String) -> String {
        use axum::response::Redirect;
        use axum::routing::get;
        let app = axum::Router::new()
            .route("/here", get(|| async { Redirect::temporary("/there") }))
            .route(
                "/away",
                get(move || async move { Redirect::temporary(&elsewhere) }),
            )
            .route("/there", get(|| async { "image" }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{address}")
    }

    // SPEC D13: an image backend follows a redirect within its own origin, never to another one
    // (the 3xx is the answer, a failure).
    #[tokio::test]
    async fn backends_follow_no_redirect_to_another_origin() {
        crate::http_body::install_crypto_provider();
        let other = server("http://127.0.0.1:9/".into()).await;
        let backend = server(format!("{other}/there")).await;
        let http = super::http().unwrap();
        let own = http.get(format!("{backend}/here")).send().await.unwrap();
        assert_eq!(own.status(), 200);
        let away = http.get(format!("{backend}/away")).send().await.unwrap();
        assert_eq!(away.status(), 307, "not followed to {other}");
    }
}
