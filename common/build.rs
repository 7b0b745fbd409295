//! Generates the gRPC code of `proto/tilepdb/v1` (feature `wire`: the coordinator's
//! service to workers and its table service) with the vendored protoc,
//! so no system protoc is needed.

#[cfg_attr(
    not(feature = "wire"),
    allow(
        clippy::unnecessary_wraps,
        reason = "without feature `wire` there is nothing to generate, nothing to fail"
    )
)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "wire")]
    {
        let proto_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
        let files = ["coordinator", "tables", "shards"]
            .map(|name| proto_dir.join(format!("tilepdb/v1/{name}.proto")));
        for file in &files {
            println!("cargo:rerun-if-changed={}", file.display());
        }
        // SAFETY: build scripts are single-threaded.
        unsafe { std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?) };
        tonic_prost_build::configure()
            .build_client(true)
            .build_server(true)
            .compile_protos(&files, &[proto_dir])?;
    }
    Ok(())
}
