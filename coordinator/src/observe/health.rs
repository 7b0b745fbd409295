//! `grpc.health.v1.Health` on the coordinator's gRPC port.
//!
//! The overall status (service name `""`) is `SERVING` as long as the server answers; the
//! coordinator service (`tilepdb.v1.Coordinator`) and the table service (`tilepdb.v1.Tables`)
//! are `SERVING` where this process offers them and unknown otherwise. The health service
//! takes no token: a probe learns only that the port answers and which services it offers.

use tilepdb_common::wire::proto::coordinator_server::CoordinatorServer;
use tilepdb_common::wire::proto::tables_server::TablesServer;
use tonic::server::NamedService;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::server::HealthReporter;

use crate::cluster::service::CoordinatorService;
use crate::cluster::tables::TableService;

/// The name of the coordinator service in health checks.
pub const COORDINATOR_SERVICE: &str = <CoordinatorServer<CoordinatorService> as NamedService>::NAME;
/// The name of the table service in health checks.
pub const TABLES_SERVICE: &str = <TablesServer<TableService> as NamedService>::NAME;

/// The health service of a server that offers the coordinator service if `coordinator` and
/// the table service if `tables`, with the reporter that can change their statuses.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (_reporter, service) = tilepdb_coordinator::observe::health::service(true, false).await;
/// // tonic::transport::Server::builder().add_service(service)...
/// # let _ = service; });
/// ```
pub async fn service(
    coordinator: bool,
    tables: bool,
) -> (HealthReporter, HealthServer<impl Health>) {
    let (reporter, server) = tonic_health::server::health_reporter();
    if coordinator {
        reporter
            .set_serving::<CoordinatorServer<CoordinatorService>>()
            .await;
    }
    if tables {
        reporter.set_serving::<TablesServer<TableService>>().await;
    }
    (reporter, server)
}
