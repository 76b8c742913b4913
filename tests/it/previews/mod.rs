//! Preview URLs: signed links, web origins of their own, HTTPS, and ids that are not identities.

mod incarnations;
mod links;
mod origin;
mod tls;
