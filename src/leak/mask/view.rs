//! The decoded reading of a response that masking searches besides its raw bytes: encodings that escape
//! some characters and leave others as they are, or break lines anywhere, decoded into the text they stand
//! for, each decoded byte remembering the span of the original it came from (so that a secret found in
//! the reading is replaced where it is in the original).
//!
//! What is decoded, wherever it is (one reading for them all; the raw bytes are searched too, so a secret
//! that merely looks like an escape is still found as it is):
//!
//! - `%XX`, either case (percent-encoding of any byte, mixed with literal characters);
//! - `=XX` and the soft line breaks `=\r\n` and `=\n` (quoted-printable);
//! - `&#DDD;` and `&#xHH;` / `&#XHH;` with up to [`ENTITY_DIGITS`] digits (leading zeros included), and the
//!   named entities of ASCII punctuation (HTML and XML escaping, of all characters or of some);
//! - JSON string escapes: `\uXXXX` of any character (either case, surrogate pairs), `\/`, `\"`, `\\`, `\n` and
//!   the rest, of every character or of some (the grammar the exfiltration scan reads,
//!   [`crate::leak::json_escape`]);
//! - a line break (`\n` or `\r\n`) between two characters that base64, base32 or hex use: the line breaks of
//!   wrapped base64 (MIME at 76 columns, PEM at 64, any other length) and base32.
//!
//! An escape inside another (`\u0025` for the `%` of `%2D`, `%5C` for the `\` of `\u002d`: the scan reads two
//! deep too) is read by reading the reading once more. Form encoding's `+` for a space is read only when a
//! secret holds a space (a `+` is a `+` in base64 and in most secrets).
//!
//! A secret may itself hold what reads as an escape (`Cd=Ef` is `Cd` and the byte `0xEF` to a
//! quoted-printable reader): when the reading decoded a `=XX` or a `%XX`, the text is read again without
//! decoding that kind, so a secret with a literal `=` or `%` is still found percent-encoded or
//! quoted-printable; likewise without JSON escapes for a secret that holds a `\`. An upstream can still choose encodings that these readings do not undo, or mix them
//! so that one escape swallows the first characters of the next: an upstream that wants to hand a secret
//! back can always encrypt it. See docs/src/credentials/masking.md, "What comes back".

use crate::leak::json_escape::{self, Escape};

/// The most digits a numeric character reference may have (`&#x0000073;` is still read).
pub(crate) const ENTITY_DIGITS: usize = 8;

/// The longest escape read: `&#x` and [`ENTITY_DIGITS`] hex digits and `;`.
const LONGEST_UNIT: usize = 3 + ENTITY_DIGITS + 1;

/// Named character references of ASCII characters that HTML and XML escapers write.
const NAMED: &[(&[u8], u8)] = &[
    (b"amp", b'&'),
    (b"lt", b'<'),
    (b"gt", b'>'),
    (b"quot", b'"'),
    (b"apos", b'\''),
    (b"sol", b'/'),
    (b"bsol", b'\\'),
    (b"plus", b'+'),
    (b"equals", b'='),
    (b"colon", b':'),
    (b"semi", b';'),
    (b"comma", b','),
    (b"period", b'.'),
    (b"lowbar", b'_'),
    (b"num", b'#'),
    (b"excl", b'!'),
    (b"quest", b'?'),
    (b"dollar", b'$'),
    (b"percnt", b'%'),
    (b"commat", b'@'),
    (b"ast", b'*'),
    (b"lpar", b'('),
    (b"rpar", b')'),
    (b"lsqb", b'['),
    (b"rsqb", b']'),
    (b"lcub", b'{'),
    (b"rcub", b'}'),
    (b"verbar", b'|'),
    (b"grave", b'`'),
    (b"Hat", b'^'),
    (b"tilde", b'~'),
    (b"hyphen", b'-'),
    (b"nbsp", b' '),
];

/// Which escapes a reading decodes besides character references and line breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Escapes {
    /// `=XX` (quoted-printable).
    pub(crate) qp: bool,
    /// `%XX` (percent-encoding).
    pub(crate) percent: bool,
    /// JSON string escapes.
    pub(crate) json: bool,
    /// `+` as a space (form encoding).
    pub(crate) plus: bool,
}

impl Escapes {
    /// Every escape but `+`.
    pub(crate) const ALL: Escapes = Escapes {
        qp: true,
        percent: true,
        json: true,
        plus: false,
    };
}

/// What the secrets looked for hold that a reading would take for an escape: a reading that leaves that
/// escape alone is made too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Holds {
    /// A `\`: read without JSON escapes too.
    pub(crate) backslash: bool,
    /// A space: read with `+` as a space too.
    pub(crate) space: bool,
}

impl Holds {
    /// What these secrets hold.
    pub(crate) fn of<'a>(secrets: impl IntoIterator<Item = &'a [u8]>) -> Holds {
        secrets.into_iter().fold(Holds::default(), |h, s| Holds {
            backslash: h.backslash || s.contains(&b'\\'),
            space: h.space || s.contains(&b' '),
        })
    }
}

/// One piece of the original, read from where it starts.
#[derive(Debug, PartialEq, Eq)]
enum Unit {
    /// A byte that stands for itself.
    Literal,
    /// `len` bytes standing for these (at most four: one character).
    Decoded { len: usize, value: [u8; 4], n: usize },
    /// `len` bytes standing for nothing (a soft line break, a line break inside encoded text).
    Filler { len: usize },
    /// The start of an escape or of a line break that the end of the bytes cuts short.
    Cut,
}

/// The decoded reading of some bytes.
#[derive(Debug, Default)]
pub(crate) struct DecodedView {
    /// The decoded bytes.
    pub(crate) bytes: Vec<u8>,
    /// For each decoded byte, the span of the original it came from.
    pub(crate) span: Vec<(usize, usize)>,
    /// The spans of the original that were decoded or dropped (not literal), in order.
    pub(crate) units: Vec<(usize, usize)>,
    /// Where the reading stopped: the end of the bytes, or the start of an escape or line break they cut.
    pub(crate) read_to: usize,
    /// Whether what the reading stopped at is an escape (not a line break, which begins no secret).
    pub(crate) cut_escape: bool,
    /// Whether a `=XX` was decoded.
    pub(crate) saw_qp: bool,
    /// Whether a `%XX` was decoded.
    pub(crate) saw_percent: bool,
    /// Whether a JSON escape was decoded.
    pub(crate) saw_json: bool,
    /// A reading of another reading (text escaped twice): its units span escapes of escapes.
    pub(crate) nested: bool,
}

impl DecodedView {
    /// The original position where the decoded byte `i` starts (`end` for `i` past the last).
    pub(crate) fn source(&self, i: usize, end: usize) -> usize {
        self.span.get(i).map_or(end, |s| s.0)
    }

    /// The first decoded byte that comes from at or after the original position `pos`.
    pub(crate) fn index_at(&self, pos: usize) -> usize {
        self.span.partition_point(|s| s.0 < pos)
    }

    /// `pos`, or the start of the decoded or dropped span it falls inside.
    pub(crate) fn unit_start(&self, pos: usize) -> usize {
        let i = self.units.partition_point(|u| u.1 <= pos);
        match self.units.get(i) {
            Some(&(start, _)) if start < pos => start,
            _ => pos,
        }
    }

    /// `pos`, or the end of the decoded or dropped span it falls inside.
    pub(crate) fn unit_end(&self, pos: usize) -> usize {
        let i = self.units.partition_point(|u| u.1 <= pos);
        match self.units.get(i) {
            Some(&(start, end)) if start < pos => end,
            _ => pos,
        }
    }

    /// This reading of the reading `outer`'s bytes, its spans taken back to the text `outer` read.
    fn within(self, outer: &DecodedView) -> DecodedView {
        let back = |(a, b): (usize, usize)| {
            (
                outer.source(a, outer.read_to),
                outer.span.get(b - 1).map_or(outer.read_to, |s| s.1),
            )
        };
        let whole = self.read_to >= outer.bytes.len();
        DecodedView {
            span: self.span.into_iter().map(back).collect(),
            units: self.units.into_iter().map(back).collect(),
            read_to: if whole {
                outer.read_to
            } else {
                outer.source(self.read_to, outer.read_to)
            },
            cut_escape: if whole { outer.cut_escape } else { self.cut_escape },
            bytes: self.bytes,
            nested: true,
            ..DecodedView::default()
        }
    }
}

/// Whether the reading of `bytes` would differ from them: cheap (a SIMD search for `%`, `=`, `&`, `\` and
/// line breaks), so that text with nothing encoded is searched once.
pub(crate) fn differs(bytes: &[u8], at_end: bool) -> bool {
    memchr::memchr3_iter(b'%', b'=', b'&', bytes)
        .chain(memchr::memchr3_iter(b'\n', b'\r', b'\\', bytes))
        .any(|i| unit(bytes, i, at_end, Escapes::ALL) != Unit::Literal)
}

/// The readings of `bytes` to search (`at_end` when no more bytes follow: nothing is then cut short), for
/// secrets that hold `holds`: none if it reads as it is, else the reading with every escape; that reading
/// read once more when it holds escapes itself; the ones without `=XX`, without `%XX` or (for a secret with a
/// `\`) without JSON escapes when the first decoded some; and (for a secret with a space) the one with `+` as
/// a space when there is a `+`.
pub(crate) fn readings(bytes: &[u8], at_end: bool, holds: Holds) -> Vec<DecodedView> {
    let plus = holds.space && memchr::memchr(b'+', bytes).is_some();
    if !plus && !differs(bytes, at_end) {
        return Vec::new();
    }
    let all = read(bytes, at_end, Escapes::ALL);
    let mut out = Vec::new();
    if differs(&all.bytes, at_end) {
        out.push(read(&all.bytes, at_end, Escapes::ALL).within(&all));
    }
    let without = [
        (
            all.saw_qp,
            Escapes {
                qp: false,
                ..Escapes::ALL
            },
        ),
        (
            all.saw_percent,
            Escapes {
                percent: false,
                ..Escapes::ALL
            },
        ),
        (
            all.saw_json && holds.backslash,
            Escapes {
                json: false,
                ..Escapes::ALL
            },
        ),
        (
            plus,
            Escapes {
                plus: true,
                ..Escapes::ALL
            },
        ),
    ];
    out.insert(0, all);
    out.extend(without.into_iter().filter(|w| w.0).map(|(_, e)| read(bytes, at_end, e)));
    out
}

/// The reading of `bytes` decoding these escapes; `at_end` when no more bytes follow.
pub(crate) fn read(bytes: &[u8], at_end: bool, escapes: Escapes) -> DecodedView {
    let mut v = DecodedView {
        bytes: Vec::with_capacity(bytes.len()),
        span: Vec::with_capacity(bytes.len()),
        ..DecodedView::default()
    };
    let mut i = 0;
    while i < bytes.len() {
        match unit(bytes, i, at_end, escapes) {
            Unit::Literal => {
                v.bytes.push(bytes[i]);
                v.span.push((i, i + 1));
                i += 1;
            }
            Unit::Decoded { len, value, n } => {
                v.saw_qp |= bytes[i] == b'=';
                v.saw_percent |= bytes[i] == b'%';
                v.saw_json |= bytes[i] == b'\\';
                v.bytes.extend_from_slice(&value[..n]);
                v.span.extend(std::iter::repeat_n((i, i + len), n));
                v.units.push((i, i + len));
                i += len;
            }
            Unit::Filler { len } => {
                v.units.push((i, i + len));
                i += len;
            }
            Unit::Cut => {
                v.cut_escape = !matches!(bytes[i], b'\r' | b'\n');
                v.read_to = i;
                return v;
            }
        }
    }
    v.read_to = bytes.len();
    v
}

/// The unit of `bytes` starting at `i`.
fn unit(bytes: &[u8], i: usize, at_end: bool, escapes: Escapes) -> Unit {
    let rest = &bytes[i..];
    // An escape that the end of the bytes may have cut: wait for the rest unless nothing follows.
    let cut = |min: usize| {
        if !at_end && rest.len() < min {
            Unit::Cut
        } else {
            Unit::Literal
        }
    };
    match rest[0] {
        b'%' if escapes.percent => match rest.get(1..3) {
            Some(&[h, l]) => hex_pair(h, l).map_or(Unit::Literal, |b| byte(3, b)),
            _ if rest[1..].iter().all(u8::is_ascii_hexdigit) => cut(3),
            _ => Unit::Literal,
        },
        b'=' => match rest.get(1..3) {
            Some([b'\r', b'\n']) => Unit::Filler { len: 3 },
            Some([b'\n', _]) => Unit::Filler { len: 2 },
            Some(&[h, l]) if escapes.qp => hex_pair(h, l).map_or(Unit::Literal, |b| byte(3, b)),
            Some(_) => Unit::Literal,
            _ if rest.get(1) == Some(&b'\n') => Unit::Filler { len: 2 },
            _ if rest[1..]
                .iter()
                .all(|b| (escapes.qp && b.is_ascii_hexdigit()) || *b == b'\r') =>
            {
                cut(3)
            }
            _ => Unit::Literal,
        },
        b'&' => entity(rest, at_end),
        b'\\' if escapes.json => match json_escape::escape(rest, at_end) {
            Escape::Char { len, c } => character(len, c),
            Escape::Cut => Unit::Cut,
            Escape::No => Unit::Literal,
        },
        b'+' if escapes.plus => byte(1, b' '),
        b'\r' | b'\n' => line_break(bytes, i, at_end),
        _ => Unit::Literal,
    }
}

/// A byte decoded from `len` bytes.
fn byte(len: usize, b: u8) -> Unit {
    Unit::Decoded {
        len,
        value: [b, 0, 0, 0],
        n: 1,
    }
}

fn hex_pair(h: u8, l: u8) -> Option<u8> {
    let d = |c: u8| (c as char).to_digit(16);
    u8::try_from(d(h)? * 16 + d(l)?).ok()
}

/// A character reference at the start of `rest` (which starts with `&`).
fn entity(rest: &[u8], at_end: bool) -> Unit {
    let Some(semi) = rest.iter().take(LONGEST_UNIT).position(|&b| b == b';') else {
        // No `;` yet: cut if what there is could still become a reference.
        let plausible = rest[1..].iter().all(|b| b.is_ascii_alphanumeric() || *b == b'#');
        return if !at_end && rest.len() < LONGEST_UNIT && plausible {
            Unit::Cut
        } else {
            Unit::Literal
        };
    };
    let body = &rest[1..semi];
    let code = match body {
        [b'#', b'x' | b'X', digits @ ..] => number(digits, 16),
        [b'#', digits @ ..] => number(digits, 10),
        name => NAMED.iter().find(|(n, _)| *n == name).map(|&(_, c)| u32::from(c)),
    };
    code.and_then(char::from_u32)
        .map_or(Unit::Literal, |c| character(semi + 1, c))
}

/// A character decoded from `len` bytes.
fn character(len: usize, c: char) -> Unit {
    let mut value = [0u8; 4];
    let n = c.encode_utf8(&mut value).len();
    Unit::Decoded { len, value, n }
}

/// `digits` in this radix, if there are 1 to [`ENTITY_DIGITS`] of them.
fn number(digits: &[u8], radix: u32) -> Option<u32> {
    if digits.is_empty() || digits.len() > ENTITY_DIGITS {
        return None;
    }
    digits
        .iter()
        .try_fold(0u32, |acc, &d| Some(acc * radix + (d as char).to_digit(radix)?))
}

/// Characters of base64 (both alphabets), base32 and hex: a line break between two of them is read as
/// wrapping, not as text.
fn encoded_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// A line break (`\n` or `\r\n`) at `i`, dropped when it sits between two characters of encoded text.
fn line_break(bytes: &[u8], i: usize, at_end: bool) -> Unit {
    let len = if bytes[i] == b'\r' {
        match bytes.get(i + 1) {
            Some(b'\n') => 2,
            Some(_) => return Unit::Literal,
            None if at_end => return Unit::Literal,
            None => 0,
        }
    } else {
        1
    };
    if !i.checked_sub(1).is_some_and(|p| encoded_char(bytes[p])) {
        return Unit::Literal;
    }
    if len == 0 {
        return Unit::Cut;
    }
    match bytes.get(i + len) {
        Some(&next) if encoded_char(next) => Unit::Filler { len },
        None if !at_end => Unit::Cut,
        _ => Unit::Literal,
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
