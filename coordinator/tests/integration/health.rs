//! `grpc.health.v1` on a real coordinator process on 127.0.0.1, asked by a real gRPC health
//! client without the token (as Kubernetes' gRPC probes ask): a coordinator with a job offers
//! the coordinator and table services, `serve --no-build` only the table service, and a name
//! it does not offer is `NOT_FOUND`; the job's own service still refuses the token-less call;
//! `Watch` streams are bounded in number.

use std::process::Command;

use crate::server::{Server, coordinator_bin, scratch};
use tilepdb_common::wire::proto::JobStatusRequest;
use tilepdb_common::wire::proto::coordinator_client::CoordinatorClient;
use tilepdb_coordinator::observe::health::{
    COORDINATOR_SERVICE, MAX_HEALTH_WATCHES, TABLES_SERVICE,
};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const TOKEN: &str = "health-test-token";

/// The status the server at `url` gives `service`, or the gRPC code of its refusal.
async fn check(url: &str, service: &str) -> Result<ServingStatus, tonic::Code> {
    let channel = tonic::transport::Channel::from_shared(url.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = HealthClient::new(channel);
    client
        .check(HealthCheckRequest {
            service: service.to_string(),
        })
        .await
        .map(|r| r.into_inner().status())
        .map_err(|s| s.code())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_coordinator_with_a_job_answers_health_checks_without_the_token() {
    let dir = scratch("health-job");
    let mut command = Command::new(coordinator_bin());
    command
        .args([
            "serve",
            "--partition",
            "15:5-5-5",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.join("job"))
        .arg("--out")
        .arg(dir.join("tables"))
        .env("TILEPDB_TOKEN", TOKEN);
    // No worker: the job waits, and the server answers meanwhile.
    let mut server = Server::spawn(command);
    let url = server.url();
    runtime().block_on(async {
        assert_eq!(check(&url, "").await, Ok(ServingStatus::Serving));
        assert_eq!(
            check(&url, COORDINATOR_SERVICE).await,
            Ok(ServingStatus::Serving)
        );
        assert_eq!(
            check(&url, TABLES_SERVICE).await,
            Ok(ServingStatus::Serving)
        );
        assert_eq!(
            check(&url, "tilepdb.v1.NoSuchService").await,
            Err(tonic::Code::NotFound)
        );
        let mut job = CoordinatorClient::connect(url.clone()).await.unwrap();
        let refused = job.job_status(JobStatusRequest {}).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    });
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_table_server_offers_only_the_table_service() {
    let dir = scratch("health-tables");
    let mut command = Command::new(coordinator_bin());
    command
        .args(["serve", "--no-build", "--listen", "127.0.0.1:0", "--out"])
        .arg(&dir)
        .env("TILEPDB_TOKEN", TOKEN);
    let mut server = Server::spawn(command);
    let url = server.url();
    runtime().block_on(async {
        assert_eq!(check(&url, "").await, Ok(ServingStatus::Serving));
        assert_eq!(
            check(&url, TABLES_SERVICE).await,
            Ok(ServingStatus::Serving)
        );
        assert_eq!(
            check(&url, COORDINATOR_SERVICE).await,
            Err(tonic::Code::NotFound)
        );
        // Watch streams, without the token, are bounded: one more than the bound is
        // refused while the others are open; Check still answers.
        let channel = tonic::transport::Channel::from_shared(url.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = HealthClient::new(channel);
        let ask = || HealthCheckRequest {
            service: String::new(),
        };
        let mut open = Vec::new();
        for _ in 0..MAX_HEALTH_WATCHES {
            let mut watch = client.watch(ask()).await.unwrap().into_inner();
            assert_eq!(
                watch.message().await.unwrap().map(|r| r.status()),
                Some(ServingStatus::Serving)
            );
            open.push(watch);
        }
        let refused = client.watch(ask()).await.map(|_| ()).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert_eq!(check(&url, "").await, Ok(ServingStatus::Serving));
    });
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
