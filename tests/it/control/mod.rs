//! The control plane: run-time sandboxes and policies, reloads, replicas, hardening, violations, dangerous state.

mod dangerous_state;
mod hardening;
mod hardening_sources;
mod one_policy;
mod policies;
mod policies_shared;
mod procs;
mod reload;
mod roles;
mod sandboxes;
mod sources;
mod violations;
