//! Human approval (`action: ask`): decisions by API and webhook, `cordon approvals`, held requests under attack.

mod cli;
mod decisions;
mod held;
