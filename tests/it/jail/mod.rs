//! `cordon jail`, as root and without: what the command reaches by network, file system, kernel and streams, its exit.

mod activity;
mod activity_checks;
mod activity_user;
mod confine;
mod examples;
mod exit;
mod fs;
mod fs_user;
mod git;
mod gvisor;
mod kernel;
mod limits;
mod limits_user;
mod links;
mod root;
mod streams;
mod user;
