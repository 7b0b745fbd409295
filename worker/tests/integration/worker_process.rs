//! The `tilepdb-worker` program against a coordinator served from this test process: it
//! builds a job's tables byte for byte as the single-machine build does and exits 0; it exits
//! with a clear error when refused or when the coordinator stays unreachable.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tilepdb_common::table::{Encoding, Pdb};

use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table};
use tilepdb_coordinator::cluster::store::DataDir;
use tilepdb_coordinator::cluster::{Job, JobConfig, ServeOptions, bind, serve_on};
use tilepdb_coordinator::engine::SetSpec;
use tilepdb_coordinator::output::{set_dir, table_file_name};

const TOKEN: &str = "worker-test-token";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tilepdb-worker-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn worker(url: &str, token: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tilepdb-worker"));
    c.args(["--coordinator", url, "--threads", "2"])
        .args(extra)
        .env("TILEPDB_TOKEN", token)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    c
}

fn config(partition: Partition, rule: BlankRule, dir: &Path) -> JobConfig {
    JobConfig {
        spec: SetSpec::new(partition, Goal::BlankFirst, rule, Encoding::Byte).unwrap(),
        data_dir: dir.join("data"),
        out: dir.join("out"),
        lease_timeout: Duration::from_secs(5),
        task_ranks: None,
        tasks_per_layer: 16,
        sync: false,
        threads: 1,
        zstd_level: 1,
        prove: true,
        audit_fraction: tilepdb_coordinator::cluster::audit::DEFAULT_AUDIT_FRACTION,
    }
}

/// Serves `config`'s job on a free port and runs `workers` worker processes against it;
/// their outputs once the job is done.
fn serve_with_workers(config: JobConfig, workers: usize) -> Vec<Output> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let data = DataDir::open(&config.data_dir).unwrap();
    let job = Arc::new(Job::new(config).unwrap());
    rt.block_on(async {
        let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let options = ServeOptions {
            token: Some(TOKEN.into()),
            tls: None,
            linger: Duration::from_secs(5),
            ..ServeOptions::default()
        };
        let server = tokio::spawn(serve_on(listener, job, data, options, |_| {}));
        let url = format!("http://{addr}");
        // `Command::output` blocks: run the workers on blocking threads.
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let url = url.clone();
                tokio::task::spawn_blocking(move || worker(&url, TOKEN, &[]).output().unwrap())
            })
            .collect();
        server.await.unwrap().unwrap();
        let mut outputs = vec![];
        for h in handles {
            outputs.push(h.await.unwrap());
        }
        outputs
    })
}

#[test]
fn workers_build_the_single_machine_tables_and_exit_0() {
    for (rule, tiles) in [
        (BlankRule::Minimized, vec!["1,2,3,4", "5,6,7"]),
        (BlankRule::Aware, vec!["1,2,3"]),
        (BlankRule::Ignored, vec!["1,2,3,4,5"]),
    ] {
        let dir = scratch(&format!("same-{rule}"));
        let board = "4x4".parse().unwrap();
        let tiles: Vec<String> = tiles.into_iter().map(String::from).collect();
        let partition = Partition::custom(board, &tiles).unwrap();
        let config = config(partition.clone(), rule, &dir);
        let outputs = serve_with_workers(config, 2);
        for o in &outputs {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let set = set_dir(
            &dir.join("out"),
            &partition,
            rule,
            Goal::BlankFirst,
            Encoding::Byte,
        );
        for pattern in partition.patterns() {
            let space = StateSpace::new(board, Goal::BlankFirst, pattern.clone(), rule).unwrap();
            let want = build_table(&space, &BuildOptions::default(), &())
                .unwrap()
                .values;
            let got = Pdb::open(set.join(table_file_name(&space))).unwrap();
            assert!(
                got.payload() == want.bytes().unwrap(),
                "{rule} {{{pattern}}} differs"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_wrong_token_is_refused_clearly() {
    let dir = scratch("token");
    let partition = Partition::custom("3x3".parse().unwrap(), &["1,2".to_string()]).unwrap();
    let config = config(partition, BlankRule::Minimized, &dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let data = DataDir::open(&config.data_dir).unwrap();
    let job = Arc::new(Job::new(config).unwrap());
    rt.block_on(async {
        let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let options = ServeOptions {
            token: Some(TOKEN.into()),
            tls: None,
            linger: Duration::from_secs(1),
            ..ServeOptions::default()
        };
        let server = tokio::spawn(serve_on(listener, job, data, options, |_| {}));
        let url = format!("http://{addr}");
        let out = tokio::task::spawn_blocking(move || {
            worker(&url, "not-the-token", &[]).output().unwrap()
        })
        .await
        .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("refused") && stderr.contains("token"),
            "{stderr}"
        );
        server.abort();
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unreachable_coordinator_is_given_up_after_a_while() {
    // A port nothing listens on: bind one and let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = worker(
        &format!("http://127.0.0.1:{port}"),
        TOKEN,
        &["--give-up-after", "1"],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unreachable"), "{stderr}");
}

/// Makes a CA and a certificate for `localhost` signed by it with the `openssl` program;
/// `None` where there is none.
fn certificates(dir: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let run = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .ok()?;
    let ok = run(&[
        &["req", "-x509"][..],
        &ec,
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=tilepdb test CA",
        ],
    ]
    .concat())
        && run(&[
            &["req"][..],
            &ec,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        ]
        .concat())
        && run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
    ok.then(|| {
        (
            dir.join("ca.pem"),
            dir.join("server.pem"),
            dir.join("server.key"),
        )
    })
}

#[test]
fn workers_build_over_tls() {
    let dir = scratch("tls");
    let Some((ca, cert, key)) = certificates(&dir) else {
        crate::skip::skipped(
            "workers_build_over_tls",
            "no openssl program to make certificates with",
        );
        return;
    };
    let partition = Partition::custom("4x4".parse().unwrap(), &["1,2,3".to_string()]).unwrap();
    let config = config(partition.clone(), BlankRule::Minimized, &dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let data = DataDir::open(&config.data_dir).unwrap();
    let job = Arc::new(Job::new(config).unwrap());
    rt.block_on(async {
        let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let options = ServeOptions {
            token: Some(TOKEN.into()),
            tls: Some(tilepdb_coordinator::cluster::TlsFiles {
                cert,
                key,
                client_ca: None,
            }),
            linger: Duration::from_secs(5),
            ..ServeOptions::default()
        };
        let server = tokio::spawn(serve_on(listener, job, data, options, |_| {}));
        let port = addr.port();
        // Plain HTTP to a TLS server gets nowhere.
        let plain = tokio::task::spawn_blocking(move || {
            worker(
                &format!("http://127.0.0.1:{port}"),
                TOKEN,
                &["--give-up-after", "1"],
            )
            .output()
            .unwrap()
        });
        assert!(!plain.await.unwrap().status.success());
        let tls = tokio::task::spawn_blocking(move || {
            let ca = ca.to_str().unwrap().to_string();
            worker(
                &format!("https://localhost:{port}"),
                TOKEN,
                &["--tls-ca", &ca],
            )
            .output()
            .unwrap()
        });
        let out = tls.await.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        server.await.unwrap().unwrap();
    });
    let board = "4x4".parse().unwrap();
    let space = StateSpace::new(
        board,
        Goal::BlankFirst,
        partition.patterns()[0].clone(),
        BlankRule::Minimized,
    )
    .unwrap();
    let want = build_table(&space, &BuildOptions::default(), &())
        .unwrap()
        .values;
    let set = set_dir(
        &dir.join("out"),
        &partition,
        BlankRule::Minimized,
        Goal::BlankFirst,
        Encoding::Byte,
    );
    let got = Pdb::open(set.join(table_file_name(&space))).unwrap();
    assert!(got.payload() == want.bytes().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}
