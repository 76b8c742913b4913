//! The book (docs/src/) and the README, held to what they say: every shell block marked `sh,tested` runs, as
//! written, against the binary this tree built, and the Admin API page is the one `docs/openapi.yaml` makes.
//! (Links and anchors are checked on the built book by `.ci/book.sh`, which needs mdbook.)

mod admin_api;
mod runnable;
