//! `grpc.health.v1.Health` on the coordinator's gRPC port.
//!
//! The overall status (service name `""`) is `SERVING` as long as the server answers; the
//! coordinator service (`tilepdb.v1.Coordinator`) and the table service (`tilepdb.v1.Tables`)
//! are `SERVING` where this process offers them and unknown otherwise. The health service
//! takes no token: a probe learns only that the port answers and which services it offers.
//!
//! `Watch` is an open stream, so it is bounded ([`BoundedHealth`]): at most
//! [`MAX_HEALTH_WATCHES`] at once (one more is `RESOURCE_EXHAUSTED`; `Check` always answers),
//! and each ends after [`HEALTH_WATCH_LIFETIME`] (the protocol has clients watch again).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tilepdb_common::wire::proto::coordinator_server::CoordinatorServer;
use tilepdb_common::wire::proto::tables_server::TablesServer;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::Stream;
use tonic::server::NamedService;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tonic_health::server::{HealthReporter, HealthService};

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
    let reporter = HealthReporter::new();
    let server = HealthServer::new(BoundedHealth::new(
        HealthService::from_health_reporter(reporter.clone()),
        MAX_HEALTH_WATCHES,
        HEALTH_WATCH_LIFETIME,
    ));
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

/// Most `Watch` streams of the health service open at once.
pub const MAX_HEALTH_WATCHES: usize = 16;

/// How long a `Watch` stream of the health service lasts before it ends (the client watches
/// again).
pub const HEALTH_WATCH_LIFETIME: Duration = Duration::from_secs(300);

/// The health service with its `Watch` streams bounded: a number open at once, and a
/// lifetime each. `Check` is the inner service's.
pub struct BoundedHealth {
    inner: HealthService,
    watches: Arc<Semaphore>,
    most: usize,
    lifetime: Duration,
}

impl BoundedHealth {
    /// `inner` with at most `most` watches open at once, each ending after `lifetime`.
    pub fn new(inner: HealthService, most: usize, lifetime: Duration) -> BoundedHealth {
        BoundedHealth {
            inner,
            watches: Arc::new(Semaphore::new(most)),
            most,
            lifetime,
        }
    }
}

/// A bounded `Watch` stream: the inner one until its lifetime is over, holding its place.
type BoundedWatch = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Health for BoundedHealth {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        self.inner.check(request).await
    }

    type WatchStream = BoundedWatch;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<BoundedWatch>, Status> {
        let Ok(place) = self.watches.clone().try_acquire_owned() else {
            return Err(Status::resource_exhausted(format!(
                "{} health watches are open, as many as this server keeps: try again later, \
                 or use Check",
                self.most
            )));
        };
        let inner = self.inner.watch(request).await?.into_inner();
        Ok(Response::new(Box::pin(Lifetime {
            inner,
            end: Box::pin(tokio::time::sleep(self.lifetime)),
            _place: place,
        })))
    }
}

/// A stream that ends at `end`, holding its place among the watches until dropped.
struct Lifetime<S> {
    inner: S,
    end: Pin<Box<tokio::time::Sleep>>,
    _place: OwnedSemaphorePermit,
}

impl<S: Stream + Unpin> Stream for Lifetime<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        if self.end.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(None);
        }
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_stream::StreamExt;

    /// One watch more than the bound is refused while the others are open; a watch ends at
    /// its lifetime and gives its place back; `Check` always answers.
    #[test]
    fn watches_are_bounded_in_number_and_lifetime() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let reporter = HealthReporter::new();
            let health = BoundedHealth::new(
                HealthService::from_health_reporter(reporter.clone()),
                2,
                Duration::from_millis(50),
            );
            let ask = || {
                Request::new(HealthCheckRequest {
                    service: String::new(),
                })
            };
            let mut a = health.watch(ask()).await.unwrap().into_inner();
            let _b = health.watch(ask()).await.unwrap().into_inner();
            let refused = health.watch(ask()).await.map(|_| ()).unwrap_err();
            assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
            assert!(health.check(ask()).await.is_ok());
            // The first status, then the end at the lifetime.
            assert!(a.next().await.is_some());
            let ended = tokio::time::timeout(Duration::from_secs(60), async {
                while a.next().await.is_some() {}
            })
            .await;
            assert!(ended.is_ok(), "the watch ended");
            drop(a);
            assert!(health.watch(ask()).await.is_ok(), "its place is free again");
        });
    }
}
