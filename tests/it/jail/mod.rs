//! `cordon jail`, as root and without: what the command reaches by network, file system, kernel and streams, its exit.

mod activity;
mod confine;
mod examples;
mod exit;
mod fs;
mod fs_user;
mod kernel;
mod limits;
mod limits_user;
mod root;
mod streams;
mod user;
