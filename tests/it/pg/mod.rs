//! Replicas sharing a real PostgreSQL: the rig itself, sandboxes, CAs, revocations, approvals and budgets across them.

mod approvals;
mod budgets;
mod model_budgets;
mod replicas;
mod smoke;
