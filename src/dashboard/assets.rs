//! The page itself: three files embedded in the binary at build time, so
//! the dashboard works offline and needs no build step or CDN.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::http::ApiError;

const INDEX: &str = include_str!("../../assets/dashboard/index.html");
const SCRIPT: &str = include_str!("../../assets/dashboard/dashboard.js");
const STYLE: &str = include_str!("../../assets/dashboard/dashboard.css");

/// `GET /`: the page.
pub(super) async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

/// `GET /dashboard/{file}`: its script and style sheet.
pub(super) async fn file(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "dashboard.js" => asset("text/javascript; charset=utf-8", SCRIPT),
        "dashboard.css" => asset("text/css; charset=utf-8", STYLE),
        _ => ApiError::NoSuchRoute.into_response(),
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // A restarted (perhaps upgraded) broker serves its own page.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
