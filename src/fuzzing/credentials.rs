//! The reads the credentials step makes of a request body it reads whole (`src/inject/outgoing.rs`): the
//! exfiltration scan, then the token-request reader (`src/inject/token_request.rs`), over the same readings.

use bytes::Bytes;
use http::request::Parts;

use crate::leak::scan::detect::{Detector, Found};
use crate::leak::scan::views::Readings;

/// What the credentials step finds in a whole body sent with `parts`: the scan's findings, and the grants the
/// token-request reader reads (or why it cannot read them as every server would).
pub fn whole_body(detector: &Detector, parts: &Parts, body: Bytes) -> (Found, Result<Vec<String>, String>) {
    let read = Readings::of(body);
    (
        detector.scan_read(&read),
        crate::inject::token_request::grants(parts, Some(&read)),
    )
}
