//! `cordon reasons [CODE] [--json | --markdown]`: what a reason code means, how the sandbox was answered, and what
//! to do.

use std::process::ExitCode;

use serde_json::{Value, json};

use crate::reason::Reason;

/// The registry's table (aligned columns for people, Markdown with `markdown`), or one reason's answer and
/// meaning; as JSON when `json` (exit 2: no such code).
pub(super) fn main(code: Option<&str>, json: bool, markdown: bool) -> ExitCode {
    let Some(code) = code else {
        if json {
            let all: Vec<Value> = Reason::ALL.iter().map(|r| shape(*r)).collect();
            outln!("{}", super::sandbox::pretty(&json!({ "reasons": all })).trim_end());
        } else if markdown {
            outln!("{}", Reason::table().trim_end());
        } else {
            let mut rows = vec![vec!["CODE".to_owned(), "ANSWER".to_owned(), "MEANING".to_owned()]];
            rows.extend(
                Reason::ALL
                    .iter()
                    .map(|r| vec![r.code().to_owned(), r.answer().shown(), r.meaning().to_owned()]),
            );
            out!("{}", super::render::align(&rows));
            outln!("`cordon reasons CODE` says what to do about one.");
        }
        return ExitCode::SUCCESS;
    };
    match Reason::from_code(code) {
        Some(reason) if json => {
            outln!("{}", super::sandbox::pretty(&shape(reason)).trim_end());
            ExitCode::SUCCESS
        }
        Some(reason) => {
            outln!("{}  {}  {}", reason.code(), reason.answer().shown(), reason.meaning());
            outln!("what to do: {}", reason.remedy());
            ExitCode::SUCCESS
        }
        None => {
            let near = Reason::ALL
                .iter()
                .map(|r| (strsim::levenshtein(code, r.code()), r.code()))
                .min()
                .map(|(_, near)| format!(" (did you mean {near}?)"))
                .unwrap_or_default();
            eprintln!("cordon: {code:?} is not a reason code{near}; `cordon reasons` lists them all");
            ExitCode::from(2)
        }
    }
}

/// A reason as JSON: its `code`, the `answer` as the table shows it (`403`, `200 (in its words)`, `(1008)`,
/// `DNS REFUSED`, `closed`, `record`), the HTTP `status` when the answer is one (else null), its `meaning`, and its `remedy` (what to do).
fn shape(reason: Reason) -> Value {
    let answer = reason.answer();
    let status = answer.http_status();
    json!({
        "code": reason.code(),
        "answer": answer.shown(),
        "status": status,
        "meaning": reason.meaning(),
        "remedy": reason.remedy(),
    })
}
