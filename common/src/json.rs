//! The JSON the programs print with `--json`: one document per run, an object that begins
//! with the scheme's `version` and the `command` that printed it, in one naming scheme across
//! every command (`docs/json.md`).
//!
//! ```
//! use tilepdb_common::json::{JSON_VERSION, document};
//! #[derive(serde::Serialize)]
//! struct Out { tables: Vec<u32> }
//! let v = serde_json::to_value(document("inspect", Out { tables: vec![] })).unwrap();
//! assert_eq!(v["version"], JSON_VERSION);
//! assert_eq!(v["command"], "inspect");
//! assert!(v["tables"].is_array());
//! ```

use serde::Serialize;

/// The version of the JSON scheme: raised when a field is renamed or removed, or changes
/// meaning (a new field does not raise it).
pub const JSON_VERSION: u32 = 1;

/// `body`'s fields after `version` and `command`.
#[derive(Serialize)]
pub struct Document<'a, T: Serialize> {
    /// [`JSON_VERSION`].
    pub version: u32,
    /// The subcommand that printed the document (`build`, `solve`, ...).
    pub command: &'a str,
    /// The command's own fields.
    #[serde(flatten)]
    pub body: T,
}

/// The document of `command` with `body`'s fields (`body` serializes as an object).
pub fn document<T: Serialize>(command: &str, body: T) -> Document<'_, T> {
    Document {
        version: JSON_VERSION,
        command,
        body,
    }
}

/// Prints the document of `command` with `body`'s fields on standard output, pretty.
pub fn print<T: Serialize>(command: &str, body: T) -> serde_json::Result<()> {
    let text = serde_json::to_string_pretty(&document(command, body))?;
    crate::outln!("{text}");
    Ok(())
}
