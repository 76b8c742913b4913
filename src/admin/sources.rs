//! `source_cidrs` of a sandbox created through the admin API: parsed and checked as the file's are.

use serde_json::Value;

use crate::control::ControlError;
use crate::generation::Generation;

/// `source_cidrs`: a list of ranges in CIDR form, without host bits, none of them everything.
pub(super) fn source_cidrs(body: &Value) -> Result<Vec<ipnet::IpNet>, ControlError> {
    let invalid = |message: String| ControlError::Invalid {
        field: "source_cidrs",
        message,
    };
    let list = match body.get("source_cidrs") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(invalid("must be a list of ranges, e.g. [\"10.0.0.2/32\"]".into())),
    };
    if list.len() > 64 {
        return Err(invalid("at most 64 ranges".into()));
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let text = v.as_str().ok_or_else(|| invalid(format!("[{i}] must be a string")))?;
            let net: ipnet::IpNet = text.parse().map_err(|_| {
                invalid(format!(
                    "[{i}] {text:?} is not a range in CIDR form, e.g. \"10.0.0.2/32\""
                ))
            })?;
            if net != net.trunc() {
                return Err(invalid(format!(
                    "[{i}] {text:?} has host bits set; write {}",
                    net.trunc()
                )));
            }
            if net.prefix_len() == 0 {
                return Err(invalid(format!(
                    "[{i}] {text:?} is every address; name the sandbox's own"
                )));
            }
            Ok(net)
        })
        .collect()
}

/// The first of `new`'s ranges that a sandbox of the configuration file holds already.
pub(super) fn declared_overlap(generation: &Generation, new: &[ipnet::IpNet]) -> Option<ControlError> {
    generation.config.sandboxes.iter().find_map(|s| {
        new.iter().find_map(|mine| {
            s.source_cidrs
                .iter()
                .find(|theirs| mine.contains(*theirs) || theirs.contains(mine))
                .map(|theirs| ControlError::Overlap {
                    mine: *mine,
                    theirs: *theirs,
                    other: s.id.to_string(),
                })
        })
    })
}
