//! Watching a coordinator from outside: health checks for probes, Prometheus metrics and a
//! live web dashboard on an HTTP port of the coordinator's own, and the same figures in the
//! terminal (`status --watch`).
//!
//! * [`health`]: the standard `grpc.health.v1.Health` service, answered without the token so
//!   that Kubernetes' gRPC probes (and `grpc_health_probe`) can ask;
//! * [`refusals`]: results refused, counted by reason;
//! * [`bars`]: progress bars for the set and the table being built, on a terminal;
//! * [`progress`]: status samples folded into snapshots (layers, rates, estimates);
//! * [`metrics`]: a snapshot in the Prometheus text format;
//! * [`text`]: a snapshot for the terminal;
//! * [`http`]: the HTTP port (dashboard, metrics, JSON).

pub mod bars;
pub mod health;
pub mod http;
pub mod metrics;
pub mod progress;
pub mod refusals;
pub mod text;
