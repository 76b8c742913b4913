//! Why a destination or a path is refused, with the stable codes of each reason.

use crate::reason::Reason;

/// Why a destination or path was rejected.
///
/// The `Display` text is short and safe to send back as a 400 body; the
/// [`TargetError::code`] is the stable value for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Nothing where a host was expected.
    #[error("empty host")]
    EmptyHost,
    /// A byte outside ASCII in the host or port.
    #[error("host must be ASCII (use punycode xn-- labels)")]
    NonAsciiHost,
    /// A character no hostname may contain.
    #[error("host contains a character not allowed in a hostname")]
    BadHost,
    /// `a..b`, a leading dot, or more than one trailing dot.
    #[error("hostname has an empty label")]
    EmptyLabel,
    /// A label longer than 63 characters.
    #[error("hostname label longer than 63 characters")]
    LabelTooLong,
    /// A name longer than 253 characters.
    #[error("hostname longer than 253 characters")]
    HostTooLong,
    /// Brackets holding something that is not an IPv6 address.
    #[error("invalid IPv6 literal")]
    BadIpv6,
    /// An IPv6 literal with a zone id such as `%25eth0`.
    #[error("IPv6 zone ids are not allowed")]
    ZoneId,
    /// An IPv6 literal written without brackets.
    #[error("IPv6 literals must be in brackets")]
    UnbracketedIpv6,
    /// `user@host` or `user:pw@host`.
    #[error("userinfo (user@host) is not allowed")]
    Userinfo,
    /// A port that is not plain decimal 1–65535.
    #[error("port must be plain decimal 1-65535")]
    BadPort,
    /// A CONNECT target without a port.
    #[error("CONNECT target must include a port")]
    MissingPort,
    /// A CONNECT request-target that is not `host:port`.
    #[error("CONNECT target must be host:port")]
    NotAuthorityForm,
    /// A forward-proxy request-target without a scheme.
    #[error("request target must be an absolute http:// URI")]
    NotAbsolute,
    /// A scheme other than `http`.
    #[error("only http:// can be proxied; use CONNECT for https")]
    BadScheme,
    /// An absolute URI without an authority.
    #[error("URI has no host")]
    MissingAuthority,
    /// A path that does not start with `/`.
    #[error("path must start with /")]
    RelativePath,
    /// A `.` or `..` segment, plain or percent-encoded.
    #[error("path contains a . or .. segment")]
    DotSegment,
    /// Backslash, NUL (plain or encoded), `?` or `#` in a path.
    #[error("path contains a forbidden character")]
    BadPath,
    /// A `%` not followed by two hex digits.
    #[error("path contains a malformed percent-escape")]
    BadEscape,
}

impl TargetError {
    /// Stable machine-readable reason, for logs, metrics and tests.
    #[cfg(test)]
    pub(crate) fn code(&self) -> &'static str {
        self.reason().code()
    }

    /// The reason, as the registry names it.
    pub(crate) fn reason(&self) -> Reason {
        match self {
            TargetError::EmptyHost => Reason::EmptyHost,
            TargetError::NonAsciiHost => Reason::NonAsciiHost,
            TargetError::BadHost => Reason::BadHost,
            TargetError::EmptyLabel => Reason::EmptyLabel,
            TargetError::LabelTooLong => Reason::LabelTooLong,
            TargetError::HostTooLong => Reason::HostTooLong,
            TargetError::BadIpv6 => Reason::BadIpv6,
            TargetError::ZoneId => Reason::ZoneId,
            TargetError::UnbracketedIpv6 => Reason::UnbracketedIpv6,
            TargetError::Userinfo => Reason::Userinfo,
            TargetError::BadPort => Reason::BadPort,
            TargetError::MissingPort => Reason::MissingPort,
            TargetError::NotAuthorityForm => Reason::NotAuthorityForm,
            TargetError::NotAbsolute => Reason::NotAbsolute,
            TargetError::BadScheme => Reason::BadScheme,
            TargetError::MissingAuthority => Reason::MissingAuthority,
            TargetError::RelativePath => Reason::RelativePath,
            TargetError::DotSegment => Reason::DotSegment,
            TargetError::BadPath => Reason::BadPath,
            TargetError::BadEscape => Reason::BadEscape,
        }
    }
}
