//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds the
//! migration files at compile time, and cargo does not watch them otherwise.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
