//! What the framing guard refuses, and the report through which the connection handler learns of it.

use crate::reason::Reason;
use std::sync::{Arc, OnceLock};

/// Why the guard refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FramingViolation {
    /// The head carries both `Content-Length` and `Transfer-Encoding`.
    #[error("request has both Content-Length and Transfer-Encoding")]
    ContentLengthWithTransferEncoding,
    /// The head carries more than one `Content-Length` line, even identical ones.
    #[error("request has more than one Content-Length")]
    DuplicateContentLength,
    /// The `Content-Length` value is not plain decimal digits.
    #[error("request has an invalid Content-Length")]
    InvalidContentLength,
    /// `Transfer-Encoding` is present but not exactly one line reading `chunked`.
    #[error("request Transfer-Encoding is not exactly `chunked`")]
    TransferEncodingNotChunked,
    /// `Transfer-Encoding` in an HTTP/1.0 request.
    #[error("HTTP/1.0 request has a Transfer-Encoding")]
    TransferEncodingInHttp10,
    /// `httparse` refused the head (obs-fold, CR/NUL in values, bad request line, ...).
    #[error("malformed request head: {0}")]
    MalformedHead(String),
    /// A bad chunk-size line, a missing CRLF after chunk data, or a bad trailer section.
    #[error("malformed chunked body")]
    MalformedChunk,
    /// The head exceeds the configured size or header count.
    #[error("request head too large")]
    HeadTooLarge,
    /// The request target is longer than hyper reads (65534 bytes), within a head the configured size allows.
    #[error("request target longer than 65534 bytes")]
    UriTooLong,
}

impl FramingViolation {
    /// Stable machine-readable code, for logs and metrics.
    #[cfg(test)]
    pub(crate) fn code(&self) -> &'static str {
        self.reason().code()
    }

    /// The reason, as the registry names it.
    pub(crate) fn reason(&self) -> Reason {
        match self {
            Self::ContentLengthWithTransferEncoding => Reason::ClAndTe,
            Self::DuplicateContentLength => Reason::DuplicateContentLength,
            Self::InvalidContentLength => Reason::InvalidContentLength,
            Self::TransferEncodingNotChunked => Reason::TeNotChunked,
            Self::TransferEncodingInHttp10 => Reason::TeInHttp10,
            Self::MalformedHead(_) => Reason::MalformedHead,
            Self::MalformedChunk => Reason::MalformedChunk,
            Self::HeadTooLarge => Reason::HeadTooLarge,
            Self::UriTooLong => Reason::UriTooLong,
        }
    }
}

/// Shared handle (Clone, Send, Sync) through which the connection handler
/// learns, after hyper is done, whether (and why) the guard refused a request.
#[derive(Debug, Clone, Default)]
pub(crate) struct FramingReport {
    pub(super) violation: Arc<OnceLock<FramingViolation>>,
}

impl FramingReport {
    /// The violation that made the guard refuse a request, if any.
    pub(crate) fn violation(&self) -> Option<FramingViolation> {
        self.violation.get().cloned()
    }
}
